//! AWS Bedrock's Converse API (`/model/{id}/converse`, `/converse-stream`): every client
//! dialect is translated; SigV4 with AWS keys (`super::aws_creds`, `super::sigv4`), or a
//! Bedrock API key as a bearer.

use super::target::{key_error, KeyError, Target};
use super::{check_region, first_set, Home, KeyHeader, OwnKeys, Quirks, Routes};
use crate::dialect::{Provider, Upstream};

pub(crate) const HOME: Home = Home {
    // Converse, which no client route speaks: every client dialect is translated.
    speaks: &[Upstream::Converse],
    api: Upstream::Converse,
    // A Bedrock API key (the other keys sign: `Credential::sigv4`).
    key_header: |_| KeyHeader::Bearer,
    default_base_url: Some(|t| {
        Some(format!(
            "https://bedrock-runtime.{}.amazonaws.com",
            t.region.as_deref().unwrap_or_default()
        ))
    }),
    signs_with_aws: true,
    routes: |r| Routes::Pair {
        answer: r.base.join(&bedrock_path(&r.target.model, false)),
        stream: r.base.join(&bedrock_path(&r.target.model, true)),
    },
    quirks: Quirks::PLAIN,
};

/// The path of a Bedrock model's Converse call, `stream` or not: `/model/{id}/converse`
/// with the id percent-encoded as botocore does (all but `A-Za-z0-9-._~`), so an id's `:`
/// and an ARN's `/` stay inside one segment. The signer encodes the path once more, as
/// AWS expects (plan 1.1).
pub(crate) fn bedrock_path(model: &str, stream: bool) -> String {
    let mut p = String::with_capacity(model.len() + 24);
    p.push_str("/model/");
    for b in model.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            p.push(b as char);
        } else {
            p.push_str(&format!("%{b:02X}"));
        }
    }
    p.push_str(if stream {
        "/converse-stream"
    } else {
        "/converse"
    });
    p
}

/// `region`, `aws_credentials`, `aws_profile`.
pub(crate) const KEYS: OwnKeys = OwnKeys {
    owners: &[Provider::Bedrock],
    first_set: |t| {
        first_set(&[
            ("region", t.region.is_some()),
            ("aws_credentials", t.aws_credentials.is_some()),
            ("aws_profile", t.aws_profile.is_some()),
        ])
    },
    elsewhere: "applies only to provider \"bedrock\"",
    check,
};

/// The region a name; one kind of key; the AWS keys readable now (start-up fails naming
/// the source, never a value).
fn check(t: &Target) -> Result<(), KeyError> {
    let Some(region) = &t.region else {
        return Err(key_error(
            "region",
            "is required for Bedrock: an AWS region such as \"us-east-1\"",
        ));
    };
    check_region("region", region)?;
    if t.model.len() > 2048 {
        return Err(key_error(
            "model",
            "is longer than a Bedrock model id or ARN may be (2048)",
        ));
    }
    if t.api_key_env.is_some() && (t.aws_credentials.is_some() || t.aws_profile.is_some()) {
        return Err(key_error(
            "",
            "a Bedrock target takes either api_key_env (a Bedrock API key) or AWS keys (aws_credentials, aws_profile), not both",
        ));
    }
    t.aws_keys().map_err(|e| key_error("aws_credentials", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bedrock_paths() {
        assert_eq!(
            bedrock_path("anthropic.claude-3-5-sonnet-20240620-v1:0", false),
            "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse"
        );
        assert_eq!(
            bedrock_path("arn:aws:bedrock:us-east-1:1:inference-profile/us.x", true),
            "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.x/converse-stream"
        );
    }
}
