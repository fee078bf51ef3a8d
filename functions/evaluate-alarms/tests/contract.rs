//! The state machine's contract with evaluate-alarms: every path `statemachine/rollout.asl.json`
//! reads from its answers is in the JSON schema of the operation's output, generated from the
//! Rust type (`schema/outputs/evaluate-alarms.json`). See `cluster_canary_tests::contract`.

use cluster_canary_tests::contract::check_function;

#[test]
fn every_path_the_state_machine_reads_of_its_answers_is_in_their_schemas() {
    let schemas = evaluate_alarms::output_schemas()
        .into_iter()
        .map(|(operation, schema)| (operation, schema.to_value()))
        .collect();
    check_function("evaluate-alarms", "EvaluateAlarmsFunctionArn", schemas);
}
