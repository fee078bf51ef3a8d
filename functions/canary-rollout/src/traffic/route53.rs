//! Two Route 53 weighted records of one name and type (the stable's and the canary's set
//! identifiers): their weights are the records' weights.

use async_trait::async_trait;
use canary_aws::{AwsError, Route53Api, Route53Reads, WeightedRecord};
use canary_core::ownership::{external_dns_owner, external_dns_txt_names};
use canary_core::target_health::health_check_problem;
use canary_core::{Route53Target, WeightPair};

use super::{
    refuse_claimed, ControllerClaim, Detach, Health, Inspection, Located, Observed, Reading,
    Router, Side, TargetReader, TrafficRouter,
};
use crate::error::ShiftError;

/// The router of a Route 53 target: over `dyn Route53Api` it moves weights; over
/// `dyn Route53Reads` (a check's) it only reads.
pub(super) type Route53Router<'a> = Router<'a, dyn Route53Api + 'a, Route53Target>;

impl<R: Route53Reads + ?Sized> Router<'_, R, Route53Target> {
    async fn records(&self) -> Result<Vec<WeightedRecord>, ShiftError> {
        self.api.records(self.target).await.map_err(|e| self.aws(e))
    }

    /// The record with set identifier `id`, or `TargetNotFound`.
    fn record<'r>(
        &self,
        records: &'r [WeightedRecord],
        id: &str,
    ) -> Result<&'r WeightedRecord, ShiftError> {
        let r53 = self.target;
        records
            .iter()
            .find(|r| r.set_identifier.as_deref() == Some(id))
            .ok_or_else(|| ShiftError::TargetNotFound {
                path: self.located.label.clone(),
                message: format!(
                    "hosted zone {} has no {} record {} with set identifier `{id}`",
                    r53.hosted_zone_id,
                    r53.record_type.as_str(),
                    r53.fqdn()
                ),
            })
    }

    /// `TargetNotFound` when one of the plan's two records does not exist — unless
    /// `canary_may_be_absent` (GitOps mode: the new cluster's ExternalDNS creates the canary's
    /// record once Argo CD has synced its apps; until then it takes no traffic, weight 0).
    fn observed(
        &self,
        records: &[WeightedRecord],
        canary_may_be_absent: bool,
    ) -> Result<Observed, ShiftError> {
        let r53 = self.target;
        let stable = self.record(records, &r53.stable_set_identifier)?;
        let canary_weight = match self.record(records, &r53.canary_set_identifier) {
            Ok(canary) => canary.weight,
            Err(_) if canary_may_be_absent => Some(0),
            Err(e) => return Err(e),
        };
        let others: Vec<&str> = records
            .iter()
            .filter_map(|r| r.set_identifier.as_deref())
            .filter(|id| *id != r53.stable_set_identifier && *id != r53.canary_set_identifier)
            .collect();
        if !others.is_empty() {
            return Ok(Observed::Reshaped(format!(
                "other records of the same name and type also take traffic (set identifiers: {})",
                others.join(", ")
            )));
        }
        match (stable.weight, canary_weight) {
            (Some(stable), Some(canary)) => Ok(Observed::Pair(WeightPair { stable, canary })),
            _ => Ok(Observed::Reshaped(
                "its records do not use weighted routing".to_owned(),
            )),
        }
    }

    /// The records' weights. In GitOps mode the canary's record may not exist yet (see
    /// `observed`).
    async fn read_records(&self) -> Result<Reading, ShiftError> {
        let records = self.records().await?;
        let gitops = self.target.gitops().is_some();
        Ok(Reading::of(self.observed(&records, gitops)?))
    }
}

impl Route53Router<'_> {
    /// One change batch, then a bounded wait for `INSYNC`.
    pub(super) async fn write_records(&self, pair: WeightPair) -> Result<(), ShiftError> {
        let change_id = self
            .api
            .write_weights(self.target, pair.stable, pair.canary)
            .await
            .map_err(|e| self.aws(e))?;
        let in_sync = self
            .api
            .wait_in_sync(&change_id)
            .await
            .map_err(|e| self.aws(e))?;
        if !in_sync {
            return Err(ShiftError::ChangeNotInSync {
                path: self.located.label.clone(),
                change_id,
            });
        }
        Ok(())
    }

    /// Prepare's checks of the records: they exist (in GitOps mode the canary's may not yet),
    /// their TTLs, and — unless in GitOps mode, where ExternalDNS owning them is the point —
    /// that no ExternalDNS owns them.
    pub(super) async fn inspect_records(
        &self,
        shortest_bake_seconds: i64,
    ) -> Result<Inspection, ShiftError> {
        let r53 = self.target;
        let gitops = r53.gitops().is_some();
        let records = self.records().await?;
        let observed = self.observed(&records, gitops)?;
        let mut notes = Vec::new();
        let mut ttl_seconds = None;
        let ours = records.iter().filter(|r| {
            r.set_identifier.as_deref() == Some(r53.stable_set_identifier.as_str())
                || r.set_identifier.as_deref() == Some(r53.canary_set_identifier.as_str())
        });
        for record in ours {
            match (record.ttl, &record.alias_target) {
                (Some(ttl), _) => ttl_seconds = ttl_seconds.max(Some(ttl)),
                (None, Some(alias)) => notes.push(format!(
                    "record `{}` is an alias to {alias}: resolvers cache it for the alias target's TTL (60 s for a load balancer)",
                    record.set_identifier.as_deref().unwrap_or_default()
                )),
                (None, None) => {}
            }
        }
        if !gitops {
            refuse_claimed(
                self,
                "Weight records cluster-canary owns instead: weighted alias records of the service \
                 name pointing at per-cluster names each cluster's ExternalDNS manages \
                 (docs/shapes/route53-apex.md; `cluster-canary plan apex-records` creates them), \
                 or let the weights go through Argo CD (\"via\": \"argocd\", docs/shapes/gitops.md)",
                self.target.owner.as_ref(),
                &mut notes,
            )
            .await?;
        }
        if let Some(ttl) = ttl_seconds.filter(|ttl| *ttl > shortest_bake_seconds) {
            return Err(ShiftError::TargetMisconfigured {
                path: self.located.label.clone(),
                message: format!(
                    "the records' TTL is {ttl} s, longer than the shortest bake ({shortest_bake_seconds} s): resolvers would still \
                     use the previous weights when the step's checks run; lower the TTL or lengthen the bake"
                ),
            });
        }
        Ok(Inspection {
            reading: Reading::of(observed),
            attach_canary: false,
            kind: "route53",
            sticky: false,
            ttl_seconds,
            notes,
        })
    }
}

/// ExternalDNS's claims on a target's records: each TXT registry record of its, at one of the
/// names its registry uses (the plan's `owner.txtPrefix`/`txtSuffix` included), with the stable
/// or the canary set identifier (or none): which record it claims, and its owner. All of them,
/// so that a refusal names every owner (one ExternalDNS per cluster is the usual setup).
pub async fn external_dns_claims(
    api: &dyn Route53Api,
    r53: &Route53Target,
) -> Result<Vec<ControllerClaim>, AwsError> {
    registry_claims(
        api,
        r53,
        Some([&r53.stable_set_identifier, &r53.canary_set_identifier]),
    )
    .await
}

/// ExternalDNS's claims on the target's name under any set identifier (or none): a name where
/// ExternalDNS keeps records of its own, whichever clusters they are (`plan apex-records`
/// refuses such a name).
pub async fn external_dns_claims_any_set(
    api: &dyn Route53Api,
    r53: &Route53Target,
) -> Result<Vec<ControllerClaim>, AwsError> {
    registry_claims(api, r53, None).await
}

/// The registry records at the target's name, of the set identifiers in `only` (all if none).
async fn registry_claims(
    api: &dyn Route53Api,
    r53: &Route53Target,
    only: Option<[&String; 2]>,
) -> Result<Vec<ControllerClaim>, AwsError> {
    let owner = r53.owner.as_ref();
    let names = external_dns_txt_names(
        &r53.fqdn(),
        r53.record_type.as_str(),
        owner.and_then(|o| o.txt_prefix.as_deref()),
        owner.and_then(|o| o.txt_suffix.as_deref()),
    );
    let mut claims: Vec<ControllerClaim> = Vec::new();
    for name in names {
        for record in api.txt_records(&r53.hosted_zone_id, &name).await? {
            let set = record.set_identifier.as_ref();
            if set.is_some_and(|id| only.is_some_and(|ours| !ours.contains(&id))) {
                continue; // another record's registry entry
            }
            let Some(found) = record.values.iter().find_map(|v| external_dns_owner(v)) else {
                continue;
            };
            let what = match set {
                Some(id) => format!("record `{id}` (its TXT registry record {name})"),
                None => format!("the record (its TXT registry record {name})"),
            };
            let claim = ControllerClaim { what, owner: found };
            if !claims.contains(&claim) {
                claims.push(claim);
            }
        }
    }
    Ok(claims)
}

#[async_trait]
impl<R: Route53Reads + ?Sized> TargetReader for Router<'_, R, Route53Target> {
    fn located(&self) -> &Located<'_> {
        &self.located
    }

    async fn read(&self) -> Result<Reading, ShiftError> {
        self.read_records().await
    }

    /// In GitOps mode someone changed the annotation, or Git, or Argo CD synced something
    /// else: ExternalDNS now carries weights this rollout did not set, and will keep doing so.
    /// The rollout rolls back.
    fn moved(&self, found: &str) -> Option<ShiftError> {
        self.target.gitops()?;
        Some(ShiftError::WeightsNotSynced {
            path: self.located.label.clone(),
            message: format!(
                "Route 53 does not read what this rollout set through Argo CD ({found}): the \
                 annotations, Git or a sync carry other weights now"
            ),
        })
    }
}

#[async_trait]
impl TrafficRouter for Route53Router<'_> {
    async fn controllers(&self) -> Result<Vec<ControllerClaim>, ShiftError> {
        external_dns_claims(self.api, self.target)
            .await
            .map_err(|e| self.aws(e))
    }

    /// Route 53 splits traffic evenly between weighted records that are all 0, so "stable 0 /
    /// canary 0" would send the canary half.
    fn refuse_unwritable(&self, pair: WeightPair) -> Result<(), ShiftError> {
        if pair.both_zero() {
            return Err(ShiftError::InvalidInput(format!(
                "{}: refusing to write weight 0 to both records (Route 53 would split traffic evenly)",
                self.located.label
            )));
        }
        Ok(())
    }

    async fn write(&self, _reading: &Reading, pair: WeightPair) -> Result<(), ShiftError> {
        self.write_records(pair).await
    }

    async fn inspect(&self, shortest_bake_seconds: i64) -> Result<Inspection, ShiftError> {
        self.inspect_records(shortest_bake_seconds).await
    }

    async fn health(&self, side: Side, _min_healthy_targets: u32) -> Result<Health, ShiftError> {
        let records = self.records().await?;
        let set_identifier = match side {
            Side::Canary => &self.target.canary_set_identifier,
            Side::Stable => &self.target.stable_set_identifier,
        };
        let record = self.record(&records, set_identifier)?;
        let Some(health_check_id) = &record.health_check_id else {
            return Ok(Health::NotGated(format!(
                "the {} record has no Route 53 health check; nothing to look at",
                side.name()
            )));
        };
        let reports = self
            .api
            .health_check_reports(health_check_id)
            .await
            .map_err(|e| self.aws(e))?;
        Ok(health_check_problem(health_check_id, &reports).map_or(Health::Ready, Health::NotReady))
    }

    /// The stable record stays at weight 0: there is nothing to detach.
    async fn detach(&self, _expected: WeightPair) -> Result<Detach, ShiftError> {
        Ok(Detach::NothingToDetach)
    }
}

/// The Route 53 router and reader against the fake records.
#[cfg(test)]
mod tests {
    use canary_aws::fakes::FakeRoute53;
    use canary_core::{NamedError, RolloutPlan, WeightPair};
    use serde_json::{json, Value};

    use crate::set::verify;
    use crate::traffic::{readers, routers, write, Apis, Move, Observed};

    fn plan(gitops: bool) -> canary_core::plan::ValidPlan {
        let mut target = json!({
            "hostedZoneId": "Z1", "recordName": "app.example.com", "recordType": "A",
            "stableSetIdentifier": "blue", "canarySetIdentifier": "green",
        });
        if gitops {
            target["via"] = Value::from("argocd");
            target["gitops"] = json!({"stableSecret": "cluster-blue"});
        }
        RolloutPlan::parse(json!({
            "cluster": {"name": "green", "region": "us-east-1"},
            "trafficTargets": [{"route53": target}],
            "steps": [{"weight": 10}, {"weight": 100}],
            "bake": {"seconds": 60, "checkIntervalSeconds": 10},
        }))
        .expect("a valid plan")
    }

    #[tokio::test]
    async fn a_change_that_stays_pending_is_a_retryable_error() {
        let route53 = FakeRoute53::at(100, 0).never_in_sync();
        let apis = Apis {
            route53: &route53,
            ..Apis::fake()
        };
        let plan = plan(false);
        let expected = [canary_core::TargetWeights::new(
            "route53:Z1:app.example.com.:A".to_owned(),
            WeightPair {
                stable: 100,
                canary: 0,
            },
        )];
        let err = crate::set::set(&apis, &plan, 10, &expected)
            .await
            .expect_err("not in sync");
        assert_eq!(err.name().as_str(), "ChangeNotInSync");
        assert!(err.name().is_retryable());
        assert!(
            err.to_string()
                .contains("change C123 was written but is not INSYNC"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn both_records_at_zero_is_refused_before_any_write() {
        let route53 = FakeRoute53::at(100, 0);
        let apis = Apis {
            route53: &route53,
            ..Apis::fake()
        };
        let valid = plan(false);
        let router = &routers(&apis, &valid.plan)[0];
        let reading = router.read().await.expect("a read");
        let zero = WeightPair {
            stable: 0,
            canary: 0,
        };
        let err = write(router.as_ref(), &reading, zero, Move::Restore)
            .await
            .expect_err("0/0 splits evenly");
        assert_eq!(err.name().as_str(), "InvalidInput");
        assert_eq!(route53.weights(), (100, 0));
    }

    #[tokio::test]
    async fn a_reader_sees_the_records_and_a_gitops_target_found_moved_rolls_back() {
        let route53 = FakeRoute53::at(50, 50);
        let apis = Apis {
            route53: &route53,
            ..Apis::fake()
        };
        let direct = plan(false);
        let reader = &readers(apis.reads(), &direct.plan)[0];
        let observed = reader.read().await.expect("a read").observed;
        assert_eq!(
            observed,
            Observed::Pair(WeightPair {
                stable: 50,
                canary: 50
            })
        );
        let expected = [canary_core::TargetWeights::new(
            reader.key(),
            WeightPair {
                stable: 90,
                canary: 10,
            },
        )];
        let err = verify(apis.reads(), &direct, &expected)
            .await
            .expect_err("moved");
        assert_eq!(err.name().as_str(), "WeightsChangedExternally");

        let gitops = plan(true);
        let err = verify(apis.reads(), &gitops, &expected)
            .await
            .expect_err("moved");
        assert_eq!(err.name().as_str(), "WeightsNotSynced");
        assert!(err.to_string().contains("through Argo CD"), "{err}");
    }
}
