//! Secrets Manager: the connection secret for a management cluster that is not reached as EKS.

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_secretsmanager as secretsmanager;

use crate::error::AwsError;

#[async_trait]
pub trait SecretsApi: Send + Sync {
    /// The secret's string value. It is a secret: never log it.
    async fn secret_string(&self, secret_id: &str) -> Result<String, AwsError>;
}

pub struct SdkSecrets {
    client: secretsmanager::Client,
}

impl SdkSecrets {
    pub fn new(config: &SdkConfig) -> Self {
        SdkSecrets {
            client: secretsmanager::Client::new(config),
        }
    }
}

#[async_trait]
impl SecretsApi for SdkSecrets {
    async fn secret_string(&self, secret_id: &str) -> Result<String, AwsError> {
        let out = self
            .client
            .get_secret_value()
            .secret_id(secret_id)
            .send()
            .await
            .map_err(|e| AwsError::from_sdk("GetSecretValue", e))?;
        Ok(out.secret_string().unwrap_or_default().to_owned())
    }
}
