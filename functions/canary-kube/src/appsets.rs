//! Which Argo CD ApplicationSets will generate Applications for a cluster: those with a
//! `clusters` generator (at the top, or nested in a `matrix` or `merge` generator) whose
//! label selector matches the cluster Secret's labels. The selector is evaluated by kube's
//! `Selector` (`metav1.LabelSelector` semantics: every `matchLabels` pair and every
//! `matchExpressions` requirement must hold; an empty selector matches everything).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::core::{Selector, SelectorExt};
use serde_json::Value;

/// A selector from its JSON (`{matchLabels, matchExpressions}`), for kube's [`Selector`] to
/// evaluate; the error says what is wrong, as the API server would refuse it (`In`/`NotIn`
/// need values, `Exists` and `DoesNotExist` take none), naming the requirement.
pub fn label_selector(value: &Value) -> Result<Selector, String> {
    let mut selector = LabelSelector::default();
    if value.is_null() {
        return Ok(Selector::default());
    }
    if let Some(labels) = value.get("matchLabels").filter(|v| !v.is_null()) {
        let labels = labels.as_object().ok_or("matchLabels is not an object")?;
        let mut match_labels = BTreeMap::new();
        for (key, v) in labels {
            let v = v
                .as_str()
                .ok_or_else(|| format!("matchLabels.{key} is not a string"))?;
            match_labels.insert(key.clone(), v.to_owned());
        }
        selector.match_labels = Some(match_labels);
    }
    let expressions = match value.get("matchExpressions") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(items)) => items.as_slice(),
        Some(_) => return Err("matchExpressions is not a list".to_owned()),
    };
    let mut requirements = Vec::with_capacity(expressions.len());
    for (i, expression) in expressions.iter().enumerate() {
        let key = expression["key"]
            .as_str()
            .ok_or_else(|| format!("matchExpressions[{i}].key is missing"))?
            .to_owned();
        let values: Vec<String> = expression["values"]
            .as_array()
            .map(|vs| {
                vs.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let operator = expression["operator"].as_str().unwrap_or_default();
        match (operator, values.is_empty()) {
            ("In" | "NotIn", false) | ("Exists" | "DoesNotExist", true) => {}
            ("In" | "NotIn", true) => {
                return Err(format!(
                    "matchExpressions[{i}]: {operator} needs at least one value"
                ))
            }
            ("Exists" | "DoesNotExist", false) => {
                return Err(format!("matchExpressions[{i}]: {operator} takes no values"))
            }
            (other, _) => {
                return Err(format!(
                    "matchExpressions[{i}]: unknown operator `{other}` (In, NotIn, Exists, DoesNotExist)"
                ))
            }
        }
        requirements.push(LabelSelectorRequirement {
            key,
            operator: operator.to_owned(),
            values: (!values.is_empty()).then_some(values),
        });
    }
    selector.match_expressions = Some(requirements);
    Selector::try_from(selector).map_err(|e| e.0)
}

/// How deep `matrix`/`merge` generators nest: Argo CD allows two levels.
const MAX_NESTING: usize = 2;

/// What an ApplicationSet `clusters` generator knows of a cluster: the cluster Secret's
/// name, server and labels (from which it generates its parameters).
pub struct ClusterParams<'a> {
    /// The registered name (`name` in the Secret).
    pub name: &'a str,
    pub server: &'a str,
    pub labels: &'a BTreeMap<String, String>,
}

impl ClusterParams<'_> {
    /// The parameters the generator gives this cluster, flattened as Argo CD flattens them to
    /// match a post-selector (`name`, `server`, `metadata.labels.<key>`, `values.<key>`; with
    /// `goTemplate` the same keys, nested).
    fn flattened(&self, clusters: &Value) -> BTreeMap<String, String> {
        let mut params = BTreeMap::from([
            ("name".to_owned(), self.name.to_owned()),
            ("server".to_owned(), self.server.to_owned()),
        ]);
        for (key, value) in self.labels {
            params.insert(format!("metadata.labels.{key}"), value.clone());
        }
        if let Some(values) = clusters["values"].as_object() {
            for (key, value) in values {
                if let Some(value) = value.as_str() {
                    params.insert(format!("values.{key}"), value.to_owned());
                }
            }
        }
        params
    }
}

/// Whether an ApplicationSet's spec generates Applications for a cluster: one of its
/// generators is a `clusters` generator whose selector selects the cluster Secret's labels
/// and whose post-selector (the generator's own `selector`, Argo CD's "post selector") keeps
/// the cluster's parameters (a matrix or merge counts when any of its child generators does).
/// A selector the API server or Argo CD would refuse is an error saying what is wrong with it.
pub fn selects_cluster(spec: &Value, cluster: &ClusterParams<'_>) -> Result<bool, String> {
    generators_select(&spec["generators"], cluster, 0)
}

fn generators_select(
    generators: &Value,
    cluster: &ClusterParams<'_>,
    depth: usize,
) -> Result<bool, String> {
    let Some(generators) = generators.as_array() else {
        return Ok(false);
    };
    for generator in generators {
        if let Some(clusters) = generator.get("clusters") {
            let selected = label_selector(&clusters["selector"])?.matches(cluster.labels);
            let kept = match generator.get("selector") {
                Some(post) => label_selector(post)
                    .map_err(|why| format!("post selector: {why}"))?
                    .matches(&cluster.flattened(clusters)),
                None => true,
            };
            if selected && kept {
                return Ok(true);
            }
        }
        for combining in ["matrix", "merge"] {
            if let Some(inner) = generator.get(combining).filter(|_| depth < MAX_NESTING) {
                if generators_select(&inner["generators"], cluster, depth + 1)? {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn selector(value: Value) -> Selector {
        label_selector(&value).expect("a valid selector")
    }

    #[test]
    fn selector_semantics_are_kubernetes() {
        let l = labels(&[("env", "prod"), ("fleet", "web")]);
        let cases = [
            (json!({}), true),
            (json!(null), true),
            (json!({"matchLabels": {"env": "prod"}}), true),
            (
                json!({"matchLabels": {"env": "prod", "fleet": "api"}}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "staging"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "env", "operator": "In", "values": ["staging"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["staging"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}),
                false,
            ),
            // NotIn matches a missing label.
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "fleet", "operator": "Exists"}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}),
                false,
            ),
            // Every part must hold.
            (
                json!({"matchLabels": {"env": "prod"},
                    "matchExpressions": [{"key": "fleet", "operator": "NotIn", "values": ["web"]}]}),
                false,
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(selector(value.clone()).matches(&l), expected, "{value}");
        }
    }

    #[test]
    fn malformed_selectors_are_refused_with_the_reason() {
        for (value, says) in [
            (
                json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
                "needs at least one value",
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
                "takes no values",
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
                "unknown operator `Gt`",
            ),
            (
                json!({"matchExpressions": [{"operator": "Exists"}]}),
                "key is missing",
            ),
            (
                json!({"matchLabels": ["a"]}),
                "matchLabels is not an object",
            ),
        ] {
            let error = label_selector(&value).expect_err("refused");
            assert!(error.contains(says), "{value}: {error}");
        }
    }

    fn cluster(labels: &BTreeMap<String, String>) -> ClusterParams<'_> {
        ClusterParams {
            name: "green",
            server: "https://green.example.com",
            labels,
        }
    }

    #[test]
    fn a_post_selector_keeps_or_drops_the_cluster_by_its_parameters() {
        let labels = labels(&[
            ("argocd.argoproj.io/secret-type", "cluster"),
            ("env", "prod"),
        ]);
        let with_post = |post: Value| json!({"generators": [{"clusters": {"values": {"tier": "front"}}, "selector": post}]});
        let cases = [
            (
                json!({"matchLabels": {"metadata.labels.env": "prod"}}),
                true,
            ),
            (
                json!({"matchLabels": {"metadata.labels.env": "staging"}}),
                false,
            ),
            (
                json!({"matchLabels": {"name": "green", "values.tier": "front"}}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "server", "operator": "NotIn", "values": ["https://green.example.com"]}]}),
                false,
            ),
        ];
        for (post, kept) in cases {
            assert_eq!(
                selects_cluster(&with_post(post.clone()), &cluster(&labels)),
                Ok(kept),
                "{post}"
            );
        }
        let nested = json!({"generators": [{"matrix": {"generators": [
            {"list": {"elements": [{"app": "a"}]}},
            {"clusters": {}, "selector": {"matchLabels": {"metadata.labels.env": "staging"}}}
        ]}}]});
        assert_eq!(selects_cluster(&nested, &cluster(&labels)), Ok(false));
        let broken = with_post(json!({"matchExpressions": [{"key": "env", "operator": "Equals"}]}));
        let error = selects_cluster(&broken, &cluster(&labels)).expect_err("refused");
        assert!(
            error.starts_with("post selector: matchExpressions[0]: unknown operator"),
            "{error}"
        );
    }

    #[test]
    fn cluster_generators_select_top_level_and_nested() {
        let web = labels(&[
            ("argocd.argoproj.io/secret-type", "cluster"),
            ("fleet", "web"),
        ]);
        let web = cluster(&web);
        let top =
            json!({"generators": [{"clusters": {"selector": {"matchLabels": {"fleet": "web"}}}}]});
        let other =
            json!({"generators": [{"clusters": {"selector": {"matchLabels": {"fleet": "api"}}}}]});
        let matrix = json!({"generators": [{"matrix": {"generators": [
            {"list": {"elements": [{"app": "a"}, {"app": "b"}]}},
            {"clusters": {"selector": {"matchExpressions": [{"key": "fleet", "operator": "In", "values": ["web"]}]}}}
        ]}}]});
        let merge_in_matrix = json!({"generators": [{"matrix": {"generators": [
            {"git": {"repoURL": "https://git.example.com/apps.git"}},
            {"merge": {"generators": [{"clusters": {}}, {"list": {"elements": []}}]}}
        ]}}]});
        let no_clusters = json!({"generators": [{"list": {"elements": [{"cluster": "green"}]}}]});
        assert_eq!(selects_cluster(&top, &web), Ok(true));
        assert_eq!(selects_cluster(&other, &web), Ok(false));
        assert_eq!(selects_cluster(&matrix, &web), Ok(true));
        assert_eq!(
            selects_cluster(&merge_in_matrix, &web),
            Ok(true),
            "no selector: every cluster"
        );
        assert_eq!(selects_cluster(&no_clusters, &web), Ok(false));
        assert_eq!(selects_cluster(&json!({}), &web), Ok(false));
        let broken = json!({"generators": [{"clusters": {"selector": {"matchExpressions": [{"key": "x", "operator": "In"}]}}}]});
        assert!(selects_cluster(&broken, &web).is_err());
    }

    fn label_map() -> impl Strategy<Value = BTreeMap<String, String>> {
        proptest::collection::btree_map("[a-c]", "[x-z]", 0..4)
    }

    proptest! {
        /// In and NotIn over the same values are each other's negation; Exists and
        /// DoesNotExist too; matchLabels {k: v} is In(k, [v]).
        #[test]
        fn operators_are_consistent(labels in label_map(), key in "[a-c]", values in proptest::collection::vec("[x-z]", 1..3)) {
            let holds = |operator: &str, values: &[String]| {
                selector(json!({"matchExpressions": [{"key": key, "operator": operator, "values": values}]})).matches(&labels)
            };
            prop_assert_eq!(holds("In", &values), !holds("NotIn", &values));
            prop_assert_eq!(holds("Exists", &[]), !holds("DoesNotExist", &[]));
            let single = selector(json!({"matchLabels": {&key: &values[0]}}));
            prop_assert_eq!(single.matches(&labels), holds("In", &values[..1]));
        }

        /// Adding a requirement never selects more.
        #[test]
        fn requirements_only_narrow(labels in label_map(), key in "[a-c]", value in "[x-z]") {
            let base = selector(json!({"matchLabels": {&key: &value}}));
            let narrower = selector(json!({"matchLabels": {&key: &value}, "matchExpressions": [{"key": "b", "operator": "Exists"}]}));
            prop_assert!(!narrower.matches(&labels) || base.matches(&labels));
        }
    }
}
