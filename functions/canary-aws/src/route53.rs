//! Route 53 weighted records: read the records of a name and type, and change the weights
//! of the stable and canary records together in one `ChangeResourceRecordSets` batch.

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_route53 as route53;
use canary_core::ownership::NamedTxt;
use canary_core::Route53Target;
use route53::types::{
    AliasTarget, Change, ChangeAction, ChangeBatch, ChangeStatus, ResourceRecordSet, RrType,
};

use crate::error::{AwsError, AwsErrorKind};
use crate::poll::{until_done, PollWait};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightedRecord {
    pub set_identifier: Option<String>,
    /// `None` for a record without weighted routing.
    pub weight: Option<u16>,
    /// `None` for an alias record (its TTL is the alias target's).
    pub ttl: Option<i64>,
    /// The DNS name of the alias target, for alias records.
    pub alias_target: Option<String>,
    /// The Route 53 health check of the record, if it has one.
    pub health_check_id: Option<String>,
}

/// What a check reads of a Route 53 target. A function that only reads (evaluate-alarms)
/// holds the client as `dyn Route53Reads`, whose vtable links none of the writes.
#[async_trait]
pub trait Route53Reads: Send + Sync {
    /// Every record of the target's name and type. `NotFound` if the hosted zone does not exist.
    async fn records(&self, target: &Route53Target) -> Result<Vec<WeightedRecord>, AwsError>;
}

/// Everything a rollout and the CLI do with Route 53.
#[async_trait]
pub trait Route53Api: Route53Reads {
    /// UPSERTs the stable and the canary record with new weights in one change batch, keeping
    /// everything else in each record. Returns the change id.
    async fn write_weights(
        &self,
        target: &Route53Target,
        stable: u16,
        canary: u16,
    ) -> Result<String, AwsError>;
    /// Waits (bounded) until the change is `INSYNC`; `false` if the bound ran out first.
    async fn wait_in_sync(&self, change_id: &str) -> Result<bool, AwsError>;
    /// What each Route 53 health checker last reported for a health check
    /// (`GetHealthCheckStatus`): `Success: …` or `Failure: …`.
    async fn health_check_reports(&self, health_check_id: &str) -> Result<Vec<String>, AwsError>;
    /// The TXT records named `name` (as Route 53 lists it) in the zone: each one's set
    /// identifier and values (ExternalDNS's registry records are looked for among them).
    async fn txt_records(&self, zone_id: &str, name: &str) -> Result<Vec<TxtRecord>, AwsError>;
    /// Every record of one name (as Route 53 lists it, with the trailing dot) and type.
    async fn named_records(
        &self,
        zone_id: &str,
        name: &str,
        record_type: &str,
    ) -> Result<Vec<WeightedRecord>, AwsError>;
    /// CREATEs weighted alias records (A or AAAA) of `name` in one change batch, each an alias
    /// of another name of the same zone, its health evaluated. Route 53 refuses the whole batch
    /// if one exists. Returns the change id.
    async fn create_weighted(
        &self,
        zone_id: &str,
        name: &str,
        record_type: &str,
        records: &[NewWeightedRecord],
    ) -> Result<String, AwsError>;
}

/// A weighted record to create: its set identifier, weight, and the name it points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWeightedRecord {
    pub set_identifier: String,
    pub weight: u16,
    pub points_to: String,
}

/// A TXT record set: its set identifier (weighted TXT records have one) and its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxtRecord {
    pub set_identifier: Option<String>,
    pub values: Vec<String>,
}

pub struct SdkRoute53 {
    client: route53::Client,
    in_sync: PollWait,
}

impl SdkRoute53 {
    pub fn new(config: &SdkConfig, in_sync: PollWait) -> Self {
        SdkRoute53 {
            client: route53::Client::new(config),
            in_sync,
        }
    }

    /// Sends one change batch to the zone; the change id.
    async fn change(
        &self,
        zone_id: &str,
        comment: String,
        changes: Vec<Change>,
    ) -> Result<String, AwsError> {
        let batch = ChangeBatch::builder()
            .comment(comment)
            .set_changes(Some(changes))
            .build()
            .map_err(change_not_built)?;
        let out = self
            .client
            .change_resource_record_sets()
            .hosted_zone_id(zone_id)
            .change_batch(batch)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("ChangeResourceRecordSets", e))?;
        Ok(out
            .change_info()
            .map(|c| c.id().to_owned())
            .unwrap_or_default())
    }

    /// The full record sets of the target's name and type, following pages.
    async fn record_sets(
        &self,
        target: &Route53Target,
    ) -> Result<Vec<ResourceRecordSet>, AwsError> {
        let rr_type = RrType::from(target.record_type.as_str());
        self.record_sets_named(&target.hosted_zone_id, &target.fqdn(), rr_type)
            .await
    }

    /// The full record sets of one name (as Route 53 lists it) and type, following pages.
    async fn record_sets_named(
        &self,
        zone_id: &str,
        name: &str,
        rr_type: RrType,
    ) -> Result<Vec<ResourceRecordSet>, AwsError> {
        let mut request = self
            .client
            .list_resource_record_sets()
            .hosted_zone_id(zone_id)
            .start_record_name(name)
            .start_record_type(rr_type.clone());
        let mut sets = Vec::new();
        loop {
            let page = request
                .clone()
                .send()
                .await
                .map_err(|e| AwsError::from_sdk("ListResourceRecordSets", e))?;
            let mut past_the_name = false;
            for set in page.resource_record_sets() {
                if set.name().eq_ignore_ascii_case(name) && set.r#type() == &rr_type {
                    sets.push(set.clone());
                } else {
                    // Listing is sorted from the start name and type: anything else means we are past them.
                    past_the_name = true;
                    break;
                }
            }
            if past_the_name || !page.is_truncated() {
                return Ok(sets);
            }
            request = request
                .set_start_record_name(page.next_record_name().map(str::to_owned))
                .set_start_record_type(page.next_record_type().cloned())
                .set_start_record_identifier(page.next_record_identifier().map(str::to_owned));
        }
    }
}

impl SdkRoute53 {
    /// The zone's TXT record sets, at most `max` (the listing stops there): what `plan check`
    /// reads to say where ExternalDNS's registry records are (a person's dry run; the
    /// functions never list a zone).
    pub async fn zone_txt_records(
        &self,
        zone_id: &str,
        max: usize,
    ) -> Result<Vec<NamedTxt>, AwsError> {
        let mut request = self
            .client
            .list_resource_record_sets()
            .hosted_zone_id(zone_id);
        let mut found = Vec::new();
        let mut listed = 0;
        loop {
            let page = request
                .clone()
                .send()
                .await
                .map_err(|e| AwsError::from_sdk("ListResourceRecordSets", e))?;
            for set in page.resource_record_sets() {
                listed += 1;
                if set.r#type() == &RrType::Txt {
                    found.push(NamedTxt {
                        name: set.name().to_ascii_lowercase(),
                        set_identifier: set.set_identifier().map(str::to_owned),
                        values: set
                            .resource_records()
                            .iter()
                            .map(|r| r.value().to_owned())
                            .collect(),
                    });
                }
            }
            if listed >= max || !page.is_truncated() {
                return Ok(found);
            }
            request = request
                .set_start_record_name(page.next_record_name().map(str::to_owned))
                .set_start_record_type(page.next_record_type().cloned())
                .set_start_record_identifier(page.next_record_identifier().map(str::to_owned));
        }
    }
}

fn to_model(set: &ResourceRecordSet) -> Result<WeightedRecord, AwsError> {
    let weight = set
        .weight()
        .map(|w| {
            u16::try_from(w).map_err(|_| {
                AwsError::new(
                    AwsErrorKind::Rejected,
                    "ListResourceRecordSets",
                    format!(
                        "record {} has weight {w}, outside Route 53's 0-255",
                        set.name()
                    ),
                )
            })
        })
        .transpose()?;
    Ok(WeightedRecord {
        set_identifier: set.set_identifier().map(str::to_owned),
        weight,
        ttl: set.ttl(),
        alias_target: set.alias_target().map(|a| a.dns_name().to_owned()),
        health_check_id: set.health_check_id().map(str::to_owned),
    })
}

fn upsert(mut set: ResourceRecordSet, weight: u16) -> Result<Change, AwsError> {
    set.weight = Some(i64::from(weight));
    Change::builder()
        .action(ChangeAction::Upsert)
        .resource_record_set(set)
        .build()
        .map_err(change_not_built)
}

/// The SDK refused to build the change (a required field missing): nothing was sent.
fn change_not_built(e: aws_smithy_types::error::operation::BuildError) -> AwsError {
    AwsError::new(
        AwsErrorKind::Rejected,
        "ChangeResourceRecordSets",
        e.to_string(),
    )
}

#[async_trait]
impl Route53Reads for SdkRoute53 {
    async fn records(&self, target: &Route53Target) -> Result<Vec<WeightedRecord>, AwsError> {
        self.record_sets(target)
            .await?
            .iter()
            .map(to_model)
            .collect()
    }
}

#[async_trait]
impl Route53Api for SdkRoute53 {
    async fn write_weights(
        &self,
        target: &Route53Target,
        stable: u16,
        canary: u16,
    ) -> Result<String, AwsError> {
        let sets = self.record_sets(target).await?;
        let find = |id: &str| {
            sets.iter()
                .find(|s| s.set_identifier() == Some(id))
                .cloned()
                .ok_or_else(|| {
                    AwsError::new(
                        AwsErrorKind::NotFound,
                        "ListResourceRecordSets",
                        format!(
                            "no {} record {} with set identifier {id}",
                            target.record_type.as_str(),
                            target.fqdn()
                        ),
                    )
                })
        };
        let changes = vec![
            upsert(find(&target.stable_set_identifier)?, stable)?,
            upsert(find(&target.canary_set_identifier)?, canary)?,
        ];
        let comment = format!("cluster-canary: stable {stable} / canary {canary}");
        self.change(&target.hosted_zone_id, comment, changes).await
    }

    async fn wait_in_sync(&self, change_id: &str) -> Result<bool, AwsError> {
        until_done(self.in_sync, || async {
            let out = self
                .client
                .get_change()
                .id(change_id)
                .send()
                .await
                .map_err(|e| AwsError::from_sdk("GetChange", e))?;
            Ok(out.change_info().map(|c| c.status()) == Some(&ChangeStatus::Insync))
        })
        .await
    }

    async fn health_check_reports(&self, health_check_id: &str) -> Result<Vec<String>, AwsError> {
        let out = self
            .client
            .get_health_check_status()
            .health_check_id(health_check_id)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("GetHealthCheckStatus", e))?;
        Ok(out
            .health_check_observations()
            .iter()
            .filter_map(|o| o.status_report()?.status())
            .map(str::to_owned)
            .collect())
    }

    async fn named_records(
        &self,
        zone_id: &str,
        name: &str,
        record_type: &str,
    ) -> Result<Vec<WeightedRecord>, AwsError> {
        self.record_sets_named(zone_id, name, RrType::from(record_type))
            .await?
            .iter()
            .map(to_model)
            .collect()
    }

    async fn create_weighted(
        &self,
        zone_id: &str,
        name: &str,
        record_type: &str,
        records: &[NewWeightedRecord],
    ) -> Result<String, AwsError> {
        let rr_type = RrType::from(record_type);
        let changes = records
            .iter()
            .map(|record| {
                let alias = AliasTarget::builder()
                    .hosted_zone_id(zone_id)
                    .dns_name(&record.points_to)
                    .evaluate_target_health(true)
                    .build()
                    .map_err(change_not_built)?;
                let set = ResourceRecordSet::builder()
                    .name(name)
                    .r#type(rr_type.clone())
                    .set_identifier(&record.set_identifier)
                    .weight(i64::from(record.weight))
                    .alias_target(alias)
                    .build()
                    .map_err(change_not_built)?;
                Change::builder()
                    .action(ChangeAction::Create)
                    .resource_record_set(set)
                    .build()
                    .map_err(change_not_built)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let comment = "cluster-canary apex-records: weighted records cluster-canary owns";
        self.change(zone_id, comment.to_owned(), changes).await
    }

    async fn txt_records(&self, zone_id: &str, name: &str) -> Result<Vec<TxtRecord>, AwsError> {
        let sets = self.record_sets_named(zone_id, name, RrType::Txt).await?;
        Ok(sets
            .iter()
            .map(|set| TxtRecord {
                set_identifier: set.set_identifier().map(str::to_owned),
                values: set
                    .resource_records()
                    .iter()
                    .map(|r| r.value().to_owned())
                    .collect(),
            })
            .collect())
    }
}
