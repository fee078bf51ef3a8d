//! Credentials of another account's role: STS `AssumeRole`, made with the function's own
//! credentials.
//!
//! Not aws-config's `AssumeRoleProvider`: building one can fall back to aws-config's default
//! loader, which links its whole credential and region chains (profiles, IMDS, ECS, web
//! identity) into every function, 0.2 MB that a function never runs
//! (docs/size-and-startup.md). The SDK client given these credentials caches them until
//! shortly before they expire, so STS is asked once per client, not per call.

use std::time::SystemTime;

use aws_config::SdkConfig;
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{future, ProvideCredentials};
use aws_credential_types::Credentials;
use aws_sdk_sts as sts;

#[derive(Debug)]
pub struct AssumedRole {
    sts: sts::Client,
    role_arn: String,
    session_name: String,
}

impl AssumedRole {
    /// `role_arn` assumed with `config`'s credentials, in its region. Makes no network call.
    pub fn new(config: &SdkConfig, role_arn: &str, session_name: &str) -> Self {
        AssumedRole {
            sts: sts::Client::new(config),
            role_arn: role_arn.to_owned(),
            session_name: session_name.to_owned(),
        }
    }

    async fn assume(&self) -> Result<Credentials, CredentialsError> {
        let answer = self
            .sts
            .assume_role()
            .role_arn(&self.role_arn)
            .role_session_name(&self.session_name)
            .send()
            .await
            .map_err(CredentialsError::provider_error)?;
        let credentials = answer.credentials.ok_or_else(|| {
            CredentialsError::unhandled(format!(
                "STS AssumeRole of {} answered without credentials",
                self.role_arn
            ))
        })?;
        let expiry = SystemTime::try_from(credentials.expiration).map_err(|e| {
            CredentialsError::unhandled(format!(
                "STS AssumeRole of {} answered an expiry out of range: {e}",
                self.role_arn
            ))
        })?;
        Ok(Credentials::new(
            credentials.access_key_id,
            credentials.secret_access_key,
            Some(credentials.session_token),
            Some(expiry),
            "AssumeRole",
        ))
    }
}

impl ProvideCredentials for AssumedRole {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        future::ProvideCredentials::new(self.assume())
    }
}
