//! What every shift-weights test over the wire starts from: a moto server of its own, seeded
//! with `tests/moto/seed_world.py`'s world, and the function called as Lambda calls it.

use aws_config::SdkConfig;
use canary_aws::{SdkEvents, SdkExecutions};
use canary_rollout::clients::TrafficClients;
use canary_rollout::sweep::SweepApis;
use cluster_canary_tests::{Moto, Observer, World};
use serde_json::{json, Value};
use shift_weights::{handle, ShiftError};

pub struct Env {
    _moto: Moto,
    pub world: World,
    pub config: SdkConfig,
    pub observer: Observer,
    /// As the function builds them, from an environment without a management cluster.
    pub clients: TrafficClients,
}

impl Env {
    pub async fn start() -> Env {
        let moto = Moto::start();
        let world = moto.seed();
        let config = moto.sdk_config().await;
        Env {
            world,
            observer: Observer::new(&config),
            clients: TrafficClients::from_config(&config, &|_| None).expect("no MANAGEMENT_*"),
            config,
            _moto: moto,
        }
    }

    pub async fn call(&self, input: Value) -> Result<Value, ShiftError> {
        let (executions, events) = (
            SdkExecutions::new(&self.config),
            SdkEvents::new(&self.config),
        );
        let sweeping = SweepApis {
            ended: &executions,
            events: &events,
            rules: &events,
        };
        handle(&self.clients.apis(), &sweeping, input).await
    }

    pub fn execution(&self, name: &str) -> Value {
        json!({
            "executionArn": format!("{}:{name}", self.world.state_machine.replace(":stateMachine:", ":execution:")),
            "stateMachineArn": self.world.state_machine,
        })
    }

    pub async fn prepare(&self, plan: &Value) -> Result<Value, ShiftError> {
        self.call(
            json!({"operation": "prepare", "plan": plan, "execution": self.execution("self")}),
        )
        .await
    }

    pub async fn set(
        &self,
        plan: &Value,
        canary_weight: i64,
        expected: &Value,
    ) -> Result<Value, ShiftError> {
        self.call(json!({"operation": "set", "plan": plan, "canaryWeight": canary_weight, "expected": expected}))
            .await
    }
}
