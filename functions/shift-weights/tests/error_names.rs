//! What the state machine sees of shift-weights' errors: the stable error name, not the Rust
//! type. The operations' decisions are tested beside them in canary-rollout (`set.rs`,
//! `restore.rs`, `retire.rs`, `target_health.rs`, `traffic/*.rs`, `tests/gitops.rs`); this
//! crate's over-the-wire tests are `against_moto.rs`.

#[test]
fn lambda_reports_the_stable_error_name_not_the_rust_type() {
    let err = shift_weights::ShiftError::WeightsChangedExternally("x".into());
    let diagnostic = canary_lambda::diagnostic(&err);
    assert_eq!(diagnostic.error_type, "WeightsChangedExternally");
    assert_eq!(
        diagnostic.error_message,
        "weights changed outside this rollout; nothing was written: x"
    );
}
