//! Reading a Lambda's JSON input into its request type, with the failing field's path.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Deserializes `input`; the error reads `path: problem`, e.g. `canaryWeight: invalid type: string "x", expected i64`.
pub fn parse_input<T: DeserializeOwned>(input: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(input).map_err(|e| {
        let path = e.path().to_string();
        format!("{path}: {}", e.into_inner())
    })
}
