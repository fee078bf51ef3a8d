//! The state machine's contract with a function, checked on paper: every path the definition
//! (`statemachine/rollout.asl.json`) reads from the function's answers must be in the JSON
//! schema of the answering operation's output, generated from the Rust type. Each Lambda
//! crate's `tests/contract.rs` runs [`unread_paths`] with its `output_schemas()`.
//!
//! Two kinds of read are checked:
//! - a task's `ResultSelector` reading its own result (`$.Payload.settleSeconds`), against the
//!   schema of the operation the task's `Payload.operation` names;
//! - any state reading what such a task kept (`$.prepared.settleSeconds`, where `PrepareTraffic`
//!   has `ResultPath: $.prepared`): against what the task's `ResultSelector` keeps, and through
//!   it the schema. A field other states also write (a `Pass` state's `Result`, a `Catch`'s
//!   `ResultPath`) passes if any of its writers has the path.
//!
//! A task whose `Resource` is the function itself (no `Parameters`: the state goes to it as it
//! is, e.g. the execution's input at `Admit`) is answered by the operation named
//! [`DIRECT_TASK_OPERATION`]; its answer replaces the state (`ResultPath: $`), so each of the
//! schema's top-level fields is written there.
//!
//! Not checked: the plan and other execution input (`$.plan.…`), the context object (`$$.…`),
//! and fields only other functions' tasks write (their crates check those).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// A JSON schema (schemars' output), as a value.
pub type Schemas = BTreeMap<&'static str, Value>;

/// The operation name a function's schemas give the answer of a task that invokes it directly.
pub const DIRECT_TASK_OPERATION: &str = "admit";

/// Every place a path in `definition` that `function`'s answers feed is not in them, one line
/// each (`State "PrepareTraffic" reads $.Payload.settleSecs: prepare's output has no
/// settleSecs`). `function` is the template's placeholder name (`ShiftWeightsFunctionArn`).
pub fn unread_paths(definition: &Value, function: &str, schemas: &Schemas) -> Vec<String> {
    let states = all_states(definition);
    let placeholder = format!("${{{function}}}");
    let mut problems = Vec::new();
    // What each state-data field holds, per writer: Some(shape) or None (unknown: any path).
    let mut writers: BTreeMap<String, Vec<Option<Value>>> = BTreeMap::new();
    let mut ours: BTreeSet<String> = BTreeSet::new();

    for (name, state) in &states {
        let result_field = state
            .get("ResultPath")
            .and_then(Value::as_str)
            .and_then(top_field);
        if state.get("Resource").and_then(Value::as_str) == Some(placeholder.as_str()) {
            record_replaced_state(name, state, schemas, &mut writers, &mut ours, &mut problems);
        }
        let params = state.get("Parameters");
        let ours_here = params
            .and_then(|p| p.get("FunctionName"))
            .and_then(Value::as_str)
            == Some(placeholder.as_str());
        let shape = if ours_here {
            let operation = params
                .and_then(|p| p.get("Payload"))
                .and_then(|p| p.get("operation"))
                .and_then(Value::as_str)
                .unwrap_or("(none)");
            let Some(schema) = schemas.get(operation) else {
                problems.push(format!(
                    "State \"{name}\" calls operation `{operation}`, which has no output schema"
                ));
                continue;
            };
            // lambda:invoke's result: the function's answer under Payload.
            let result = object_schema([("Payload", schema.clone())]);
            match state.get("ResultSelector") {
                Some(selector) => Some(selected_shape(
                    selector,
                    &result,
                    name,
                    operation,
                    &mut problems,
                )),
                None => Some(result),
            }
        } else {
            written_shape(state)
        };
        if let Some(field) = result_field {
            if ours_here {
                ours.insert(field.clone());
            }
            writers.entry(field).or_default().push(shape);
        }
        for catch in state
            .get("Catch")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(field) = catch
                .get("ResultPath")
                .and_then(Value::as_str)
                .and_then(top_field)
            {
                let caught = ["Error", "Cause"].map(|k| (k, Value::Bool(true)));
                writers
                    .entry(field)
                    .or_default()
                    .push(Some(object_schema(caught)));
            }
        }
    }

    for (name, state) in &states {
        // A task's ResultSelector reads the task's result, not the state: checked above.
        let reads: Vec<String> = state
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(key, _)| *key != "ResultSelector")
            .flat_map(|(_, value)| paths_in(value))
            .collect();
        for path in reads {
            let mut segments = path.split('.').skip(1);
            let Some(field) = segments.next() else {
                continue;
            };
            if !ours.contains(field) {
                continue;
            }
            let rest: Vec<&str> = segments.collect();
            let shapes = &writers[field];
            let found = shapes.iter().any(|shape| match shape {
                None => true,
                Some(shape) => resolve(shape, shape, &rest).is_ok(),
            });
            if !found {
                problems.push(format!(
                    "State \"{name}\" reads {path}: no state that writes $.{field} gives {}",
                    rest.join(".")
                ));
            }
        }
    }
    problems
}

/// A task invoking the function directly: its answer (the [`DIRECT_TASK_OPERATION`] schema)
/// replaces the state, each top-level field of it written there.
fn record_replaced_state(
    name: &str,
    state: &Value,
    schemas: &Schemas,
    writers: &mut BTreeMap<String, Vec<Option<Value>>>,
    ours: &mut BTreeSet<String>,
    problems: &mut Vec<String>,
) {
    let Some(schema) = schemas.get(DIRECT_TASK_OPERATION) else {
        problems.push(format!(
            "State \"{name}\" invokes the function directly, which has no `{DIRECT_TASK_OPERATION}` output schema"
        ));
        return;
    };
    if state.get("ResultPath").is_some_and(|path| path != "$") || state.get("Parameters").is_some()
    {
        problems.push(format!(
            "State \"{name}\" invokes the function directly: only the state as it is in, and the answer replacing it (ResultPath $), are tracked"
        ));
        return;
    }
    for (field, property) in schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        ours.insert(field.clone());
        // A field of any shape (the plan as it came) is not checked.
        writers
            .entry(field.clone())
            .or_default()
            .push((!any_shape(property)).then(|| with_defs(property.clone(), schema)));
    }
}

/// A schema that says nothing of the value's shape (`true`, or only a description).
fn any_shape(schema: &Value) -> bool {
    const SHAPING: [&str; 8] = [
        "type",
        "$ref",
        "properties",
        "anyOf",
        "oneOf",
        "allOf",
        "enum",
        "const",
    ];
    schema == &Value::Bool(true)
        || schema
            .as_object()
            .is_some_and(|keys| !SHAPING.iter().any(|k| keys.contains_key(*k)))
}

/// Every state, in Parallel branches and Map processors too, with its name.
fn all_states(machine: &Value) -> Vec<(String, Value)> {
    let mut found = Vec::new();
    for (name, state) in machine
        .get("States")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        found.push((name.clone(), state.clone()));
        for branch in state
            .get("Branches")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            found.extend(all_states(branch));
        }
        for key in ["ItemProcessor", "Iterator"] {
            if let Some(inner) = state.get(key) {
                found.extend(all_states(inner));
            }
        }
    }
    found
}

/// `$.prepared` → `prepared`; deeper or other result paths are not tracked.
fn top_field(result_path: &str) -> Option<String> {
    let field = result_path.strip_prefix("$.")?;
    (!field.contains('.') && !field.is_empty()).then(|| field.to_owned())
}

/// Every `$.a.b` path in a value's strings (plain paths, and paths inside intrinsic functions
/// such as `States.MathAdd($.Payload.check, 1)`); `$$.` context paths are not state reads.
pub fn paths_in(value: &Value) -> Vec<String> {
    match value {
        Value::String(text) => {
            let mut paths = Vec::new();
            let bytes = text.as_bytes();
            let mut at = 0;
            while let Some(offset) = text[at..].find("$.") {
                let start = at + offset;
                let after_context = start > 0 && bytes[start - 1] == b'$';
                let end = text[start + 2..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                    .map_or(text.len(), |n| start + 2 + n);
                if !after_context {
                    paths.push(text[start..end].trim_end_matches('.').to_owned());
                }
                at = end.max(start + 2);
            }
            paths
        }
        Value::Array(items) => items.iter().flat_map(paths_in).collect(),
        Value::Object(map) => map.values().flat_map(paths_in).collect(),
        _ => Vec::new(),
    }
}

/// What a `ResultSelector` keeps: an object of its keys, each the schema of the result path it
/// selects (anything for an intrinsic function's result). Each path must be in `result`.
fn selected_shape(
    selector: &Value,
    result: &Value,
    state: &str,
    operation: &str,
    problems: &mut Vec<String>,
) -> Value {
    let mut properties = Map::new();
    for (key, value) in selector.as_object().into_iter().flatten() {
        let (key, is_path) = match key.strip_suffix(".$") {
            Some(key) => (key, true),
            None => (key.as_str(), false),
        };
        let mut kept = Value::Bool(true);
        for path in paths_in(value) {
            let segments: Vec<&str> = path.split('.').skip(1).collect();
            match resolve(result, result, &segments) {
                Ok(schema) => {
                    if is_path && value.as_str() == Some(path.as_str()) {
                        kept = schema;
                    }
                }
                Err(missing) => problems.push(format!(
                    "State \"{state}\" reads {path}: {operation}'s output has no {missing}"
                )),
            }
        }
        if !is_path {
            kept = Value::Bool(true);
        }
        properties.insert(key.to_owned(), kept);
    }
    object_schema_from(properties)
}

/// What a state other than our task writes at its `ResultPath`: a `Pass` state's `Result` or
/// `Parameters` (their keys; values unchecked), else unknown.
fn written_shape(state: &Value) -> Option<Value> {
    if state.get("Type").and_then(Value::as_str) != Some("Pass") {
        return None;
    }
    let written = state.get("Result").or_else(|| state.get("Parameters"))?;
    let keys = written.as_object()?.keys().map(|key| {
        (
            key.strip_suffix(".$").unwrap_or(key).to_owned(),
            Value::Bool(true),
        )
    });
    Some(object_schema_from(keys.collect()))
}

fn object_schema<const N: usize>(properties: [(&str, Value); N]) -> Value {
    object_schema_from(
        properties
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

fn object_schema_from(properties: Map<String, Value>) -> Value {
    let mut schema = Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(properties));
    Value::Object(schema)
}

/// A sub-schema carried out of its document keeps the document's `$defs`, so its `$ref`s
/// still resolve.
fn with_defs(schema: Value, document: &Value) -> Value {
    match (schema, defs_of(document)) {
        (Value::Object(mut map), Some(defs)) if !map.contains_key("$defs") => {
            map.insert("$defs".into(), defs.clone());
            Value::Object(map)
        }
        (schema, _) => schema,
    }
}

fn defs_of(document: &Value) -> Option<&Value> {
    document.get("$defs")
}

/// The sub-schema at `segments`, following `$ref`s into `root`'s `$defs`, any branch of
/// `anyOf`/`oneOf`/`allOf`, and a map's `additionalProperties`; `Err(segment)` names the
/// first segment that is not there.
fn resolve(schema: &Value, root: &Value, segments: &[&str]) -> Result<Value, String> {
    let root = if schema.get("$defs").is_some() {
        schema
    } else {
        root
    };
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or_default();
        let target = defs_of(root)
            .and_then(|defs| defs.get(name))
            .ok_or_else(|| format!("definition {reference}"))?;
        return resolve(target, root, segments);
    }
    for combinator in ["anyOf", "oneOf", "allOf"] {
        if let Some(branches) = schema.get(combinator).and_then(Value::as_array) {
            let mut missing = None;
            for branch in branches {
                match resolve(branch, root, segments) {
                    Ok(found) => return Ok(found),
                    Err(m) => missing = Some(m),
                }
            }
            if schema.get("properties").is_none() {
                return Err(missing.unwrap_or_default());
            }
        }
    }
    let Some((first, rest)) = segments.split_first() else {
        return Ok(with_defs(schema.clone(), root));
    };
    if schema == &Value::Bool(true) {
        return Ok(Value::Bool(true));
    }
    if let Some(property) = schema.get("properties").and_then(|p| p.get(*first)) {
        return resolve(property, root, rest);
    }
    match schema.get("additionalProperties") {
        Some(Value::Bool(false)) | None => Err((*first).to_owned()),
        Some(values) => resolve(values, root, rest),
    }
}

/// One function's contract test: `schema/outputs/<crate_name>.json` is the schemas as
/// generated (`UPDATE_SCHEMA=1` rewrites it), every path the checked-in definition reads from
/// the function's answers is in them, and the check does catch a renamed path of each kind.
pub fn check_function(crate_name: &str, function: &str, schemas: Schemas) {
    let generated = serde_json::to_string_pretty(&schemas).expect("schemas as JSON") + "\n";
    let file = crate::repo_root().join(format!("schema/outputs/{crate_name}.json"));
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::create_dir_all(file.parent().expect("schema/outputs")).expect("schema/outputs");
        std::fs::write(&file, &generated).expect("write the schemas");
    }
    let checked_in = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{} is not what the Rust types give: regenerate it with \
         `UPDATE_SCHEMA=1 cargo test -p {crate_name} --test contract`",
        file.display()
    );

    let text = std::fs::read_to_string(crate::repo_root().join("statemachine/rollout.asl.json"))
        .expect("statemachine/rollout.asl.json");
    let definition: Value = serde_json::from_str(&text).expect("the definition is JSON");
    let problems = unread_paths(&definition, function, &schemas);
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    // The check itself: a read of an answer, and a read of what a task kept, each renamed.
    let placeholder = format!("${{{function}}}");
    let kept = kept_by(&definition, function);
    let answer_read = |key: &str, state: &Value| {
        key == "ResultSelector"
            && state
                .get("Parameters")
                .and_then(|p| p.get("FunctionName"))
                .and_then(Value::as_str)
                == Some(placeholder.as_str())
    };
    let kept_read = |key: &str, _: &Value| key != "ResultSelector";
    let mut renamed_any = false;
    for (which, reads) in [
        ("an answer", &answer_read as &dyn Fn(&str, &Value) -> bool),
        ("a kept field", &kept_read),
    ] {
        let mut changed = definition.clone();
        let prefixes: Vec<String> = match which {
            "an answer" => vec!["$.Payload.".to_owned()],
            _ => kept.iter().map(|field| format!("$.{field}.")).collect(),
        };
        let Some(renamed) = rename_first(&mut changed, reads, &prefixes) else {
            continue;
        };
        renamed_any = true;
        let problems = unread_paths(&changed, function, &schemas);
        assert!(
            problems.iter().any(|p| p.contains(&renamed)),
            "renaming a read of {which} to {renamed} went unnoticed: {problems:?}"
        );
    }
    assert!(renamed_any, "no state reads what {function} answers");
}

/// Renames (appends `Renamed` to) the first plain path string starting with one of `prefixes`
/// under a state key `reads` accepts; returns the new path.
fn rename_first(
    machine: &mut Value,
    reads: &dyn Fn(&str, &Value) -> bool,
    prefixes: &[String],
) -> Option<String> {
    fn rename_in(value: &mut Value, prefixes: &[String]) -> Option<String> {
        match value {
            Value::String(text) if prefixes.iter().any(|p| text.starts_with(p.as_str())) => {
                text.push_str("Renamed");
                Some(text.clone())
            }
            Value::Array(items) => items.iter_mut().find_map(|v| rename_in(v, prefixes)),
            Value::Object(map) => map.values_mut().find_map(|v| rename_in(v, prefixes)),
            _ => None,
        }
    }
    let states = machine.get_mut("States")?.as_object_mut()?;
    for state in states.values_mut() {
        let snapshot = state.clone();
        if let Some(map) = state.as_object_mut() {
            for (key, value) in map.iter_mut() {
                if matches!(key.as_str(), "Branches" | "ItemProcessor" | "Iterator") {
                    continue;
                }
                if reads(key, &snapshot) {
                    if let Some(renamed) = rename_in(value, prefixes) {
                        return Some(renamed);
                    }
                }
            }
            for key in ["Branches"] {
                if let Some(Value::Array(branches)) = map.get_mut(key) {
                    for branch in branches {
                        if let Some(renamed) = rename_first(branch, reads, prefixes) {
                            return Some(renamed);
                        }
                    }
                }
            }
            for key in ["ItemProcessor", "Iterator"] {
                if let Some(inner) = map.get_mut(key) {
                    if let Some(renamed) = rename_first(inner, reads, prefixes) {
                        return Some(renamed);
                    }
                }
            }
        }
    }
    None
}

/// The state-data fields `function`'s tasks write (`prepared` for `ResultPath: $.prepared`).
fn kept_by(definition: &Value, function: &str) -> Vec<String> {
    let placeholder = format!("${{{function}}}");
    all_states(definition)
        .iter()
        .filter(|(_, state)| {
            state
                .get("Parameters")
                .and_then(|p| p.get("FunctionName"))
                .and_then(Value::as_str)
                == Some(placeholder.as_str())
        })
        .filter_map(|(_, state)| state.get("ResultPath")?.as_str().and_then(top_field))
        .collect()
}
