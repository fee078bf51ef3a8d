//! Parsing of the Elastic Load Balancing ARNs a plan names, so that a typo fails at
//! validation with a message instead of as an AWS error halfway through a rollout.
//!
//! Formats (AWS docs, "Elastic Load Balancing resource types"):
//! `arn:<partition>:elasticloadbalancing:<region>:<account>:listener/app/<lb-name>/<lb-id>/<listener-id>`
//! `arn:<partition>:elasticloadbalancing:<region>:<account>:listener/net/<lb-name>/<lb-id>/<listener-id>`
//! `arn:<partition>:elasticloadbalancing:<region>:<account>:listener-rule/app/<lb-name>/<lb-id>/<listener-id>/<rule-id>`
//! `arn:<partition>:elasticloadbalancing:<region>:<account>:targetgroup/<tg-name>/<tg-id>`

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElbArn<'a> {
    pub partition: &'a str,
    pub region: &'a str,
    pub account: &'a str,
    pub kind: ElbResource,
    /// The resource path after the kind, e.g. `app/my-lb/50dc6c495c0c9188/f2f7dc8efc522ab2`.
    pub path: &'a str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElbResource {
    /// An Application Load Balancer's listener (`listener/app/…`).
    Listener,
    ListenerRule,
    /// A Network Load Balancer's listener (`listener/net/…`). NLB listeners have no rules.
    NetworkListener,
    TargetGroup,
}

impl ElbResource {
    fn prefix(self) -> &'static str {
        match self {
            ElbResource::Listener | ElbResource::NetworkListener => "listener",
            ElbResource::ListenerRule => "listener-rule",
            ElbResource::TargetGroup => "targetgroup",
        }
    }

    /// The load balancer type a listener's path starts with; `None` for a target group,
    /// which any type may use.
    fn load_balancer_type(self) -> Option<&'static str> {
        match self {
            ElbResource::Listener | ElbResource::ListenerRule => Some("app"),
            ElbResource::NetworkListener => Some("net"),
            ElbResource::TargetGroup => None,
        }
    }

    fn described(self) -> &'static str {
        match self {
            ElbResource::Listener => "an application load balancer listener",
            ElbResource::ListenerRule => "an application load balancer listener-rule",
            ElbResource::NetworkListener => "a network load balancer listener",
            ElbResource::TargetGroup => "a load balancer targetgroup",
        }
    }

    /// Number of `/`-separated segments after the kind.
    fn segments(self) -> usize {
        match self {
            ElbResource::Listener | ElbResource::NetworkListener => 4,
            ElbResource::ListenerRule => 5,
            ElbResource::TargetGroup => 2,
        }
    }

    fn example(self) -> &'static str {
        match self {
            ElbResource::Listener => {
                "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/my-alb/50dc6c495c0c9188/f2f7dc8efc522ab2"
            }
            ElbResource::ListenerRule => {
                "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener-rule/app/my-alb/50dc6c495c0c9188/f2f7dc8efc522ab2/9683b2d02a6cabee"
            }
            ElbResource::NetworkListener => {
                "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/net/my-nlb/50dc6c495c0c9188/f2f7dc8efc522ab2"
            }
            ElbResource::TargetGroup => {
                "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue/73e2d6bc24d8a067"
            }
        }
    }
}

/// Parses `arn` as an Elastic Load Balancing ARN of the `expected` kind.
/// The error is a sentence that can follow the field path.
pub fn parse_elb_arn(arn: &str, expected: ElbResource) -> Result<ElbArn<'_>, String> {
    let bad = |why: &str| {
        format!(
            "`{arn}` is not {} ARN ({why}); expected the form {}",
            expected.described(),
            expected.example()
        )
    };
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    let [scheme, partition, service, region, account, resource] = parts[..] else {
        return Err(bad("it needs six ':'-separated parts"));
    };
    if scheme != "arn" || !partition.starts_with("aws") {
        return Err(bad("it must start with arn:aws"));
    }
    if service != "elasticloadbalancing" {
        return Err(bad("the service must be elasticloadbalancing"));
    }
    if !is_region(region) {
        return Err(bad("the region part is not a region"));
    }
    if account.len() != 12 || !account.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("the account part must be 12 digits"));
    }
    let Some((kind, path)) = resource.split_once('/') else {
        return Err(bad("the resource part has no '/'"));
    };
    if kind != expected.prefix() {
        return Err(bad(&format!("it names a `{kind}`")));
    }
    let segments: Vec<&str> = path.split('/').collect();
    if segments.len() != expected.segments() || segments.iter().any(|s| s.is_empty()) {
        return Err(bad("the resource path has the wrong number of segments"));
    }
    match (expected.load_balancer_type(), segments[0]) {
        (None, _) => {}
        (Some(wanted), found) if wanted == found => {}
        (Some("app"), "net") => {
            return Err(bad(
                "it is a network load balancer's (`net/`): give it as an `nlb` target",
            ))
        }
        (Some("net"), "app") => {
            return Err(bad(
                "it is an application load balancer's (`app/`): give it as an `alb` target",
            ))
        }
        (Some(wanted), _) => {
            return Err(bad(&format!(
                "only application (`app/`) and network (`net/`) load balancers have weighted forward actions; this one is not `{wanted}/`"
            )))
        }
    }
    Ok(ElbArn {
        partition,
        region,
        account,
        kind: expected,
        path,
    })
}

impl ElbArn<'_> {
    /// For a listener rule: the path of the listener it belongs to.
    pub fn listener_path(&self) -> Option<&str> {
        match self.kind {
            ElbResource::ListenerRule => self.path.rsplit_once('/').map(|(listener, _)| listener),
            ElbResource::Listener | ElbResource::NetworkListener => Some(self.path),
            ElbResource::TargetGroup => None,
        }
    }
}

/// The load balancer a listener belongs to: `…:listener/app/my-alb/50dc…/f2f7…` →
/// `…:loadbalancer/app/my-alb/50dc…` (or `net/`). `None` when `listener_arn` is not a
/// listener's ARN.
pub fn load_balancer_arn(listener_arn: &str) -> Option<String> {
    let arn = parse_elb_arn(listener_arn, ElbResource::Listener)
        .or_else(|_| parse_elb_arn(listener_arn, ElbResource::NetworkListener))
        .ok()?;
    let (load_balancer, _) = arn.path.rsplit_once('/')?;
    Some(format!(
        "arn:{}:elasticloadbalancing:{}:{}:loadbalancer/{load_balancer}",
        arn.partition, arn.region, arn.account
    ))
}

/// `us-east-1`, `eu-central-2`, `us-gov-west-1`, `ap-southeast-7`: lowercase words and a number.
pub fn is_region(region: &str) -> bool {
    let parts: Vec<&str> = region.split('-').collect();
    let Some((number, words)) = parts.split_last() else {
        return false;
    };
    words.len() >= 2
        && words
            .iter()
            .all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase()))
        && !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit())
}

/// An IAM role ARN: `arn:<partition>:iam::<12-digit account>:role/<path and name>`.
pub fn is_iam_role_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    matches!(parts[..], ["arn", partition, "iam", "", account, resource]
        if partition.starts_with("aws") && account.len() == 12
            && account.bytes().all(|b| b.is_ascii_digit()) && resource.starts_with("role/") && resource.len() > 5)
}

/// The account of an ARN (`arn:<partition>:<service>:<region>:<account>:...`).
pub fn account_of(arn: &str) -> Option<&str> {
    arn.split(':')
        .nth(4)
        .filter(|a| a.len() == 12 && a.bytes().all(|b| b.is_ascii_digit()))
}

/// A Lambda function ARN, optionally with a version or alias:
/// `arn:<partition>:lambda:<region>:<account>:function:<name>[:<qualifier>]`.
pub fn is_lambda_function_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.split(':').collect();
    let name_ok = |name: &str| {
        (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    let qualifier_ok = |q: &str| {
        (1..=128).contains(&q.len())
            && q.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'$')
    };
    matches!(parts.len(), 7 | 8)
        && parts[0] == "arn"
        && parts[1].starts_with("aws")
        && parts[2] == "lambda"
        && is_region(parts[3])
        && parts[4].len() == 12
        && parts[4].bytes().all(|b| b.is_ascii_digit())
        && parts[5] == "function"
        && name_ok(parts[6])
        && parts.get(7).is_none_or(|q| qualifier_ok(q))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listeners_load_balancer_is_read_off_its_arn() {
        assert_eq!(
            load_balancer_arn(ElbResource::Listener.example()).as_deref(),
            Some("arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/my-alb/50dc6c495c0c9188")
        );
        assert_eq!(
            load_balancer_arn(ElbResource::NetworkListener.example()).as_deref(),
            Some("arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/my-nlb/50dc6c495c0c9188")
        );
        assert_eq!(load_balancer_arn(ElbResource::ListenerRule.example()), None);
    }

    #[test]
    fn lambda_function_arns() {
        for good in [
            "arn:aws:lambda:us-east-1:123456789012:function:cluster-canary-hook-smoke",
            "arn:aws:lambda:eu-west-1:123456789012:function:smoke_test:live",
            "arn:aws-us-gov:lambda:us-gov-west-1:123456789012:function:f:$LATEST",
        ] {
            assert!(is_lambda_function_arn(good), "{good}");
        }
        for bad in [
            "smoke-test",
            "arn:aws:lambda:us-east-1:123456789012:layer:x",
            "arn:aws:lambda:us-east-1:1234:function:x",
            "arn:aws:states:us-east-1:123456789012:function:x",
            "arn:aws:lambda:us-east-1:123456789012:function:has space",
        ] {
            assert!(!is_lambda_function_arn(bad), "{bad}");
        }
    }

    const LISTENER: &str =
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2";
    const RULE: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener-rule/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2/9683b2d02a6cabee";
    const TG: &str =
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/blue/73e2d6bc24d8a067";

    #[test]
    fn parses_each_kind() {
        let l = parse_elb_arn(LISTENER, ElbResource::Listener).unwrap();
        assert_eq!((l.region, l.account), ("us-east-1", "123456789012"));
        let r = parse_elb_arn(RULE, ElbResource::ListenerRule).unwrap();
        assert_eq!(r.listener_path(), l.listener_path());
        parse_elb_arn(TG, ElbResource::TargetGroup).unwrap();
        let gov = TG
            .replace("arn:aws:", "arn:aws-us-gov:")
            .replace("us-east-1", "us-gov-west-1");
        parse_elb_arn(&gov, ElbResource::TargetGroup).unwrap();
    }

    #[test]
    fn rejects_wrong_shapes_with_a_reason() {
        let cases = [
            (TG, ElbResource::Listener, "it names a `targetgroup`"),
            ("not-an-arn", ElbResource::Listener, "six"),
            (
                &LISTENER.replace("elasticloadbalancing", "ec2"),
                ElbResource::Listener,
                "service",
            ),
            (
                &LISTENER.replace("us-east-1", "useast"),
                ElbResource::Listener,
                "region",
            ),
            (
                &LISTENER.replace("123456789012", "1234"),
                ElbResource::Listener,
                "12 digits",
            ),
            (
                &LISTENER.replace("/app/", "/net/"),
                ElbResource::Listener,
                "give it as an `nlb` target",
            ),
            (
                LISTENER,
                ElbResource::NetworkListener,
                "give it as an `alb` target",
            ),
            (
                &LISTENER.replace("/app/", "/gwy/"),
                ElbResource::NetworkListener,
                "have weighted forward actions",
            ),
            (
                &format!("{LISTENER}/extra"),
                ElbResource::Listener,
                "segments",
            ),
            (
                &TG.replace("targetgroup/blue/", "targetgroup//"),
                ElbResource::TargetGroup,
                "segments",
            ),
        ];
        for (arn, kind, why) in cases {
            let err = parse_elb_arn(arn, kind).unwrap_err();
            assert!(err.contains(why), "{arn}: {err}");
            assert!(err.contains("expected the form"), "{err}");
        }
    }

    #[test]
    fn regions() {
        for ok in [
            "us-east-1",
            "eu-central-2",
            "us-gov-west-1",
            "ap-southeast-7",
        ] {
            assert!(is_region(ok), "{ok}");
        }
        for bad in ["", "us", "us-east", "US-EAST-1", "us-east-x", "us--1"] {
            assert!(!is_region(bad), "{bad}");
        }
    }
}
