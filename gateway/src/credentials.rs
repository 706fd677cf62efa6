//! Each target's upstream credential, compiled from the config: a key from the environment,
//! or a credential a background task keeps fresh (Vertex service accounts' tokens, Bedrock's
//! AWS keys from a web identity or a container endpoint). The tasks are built here with the
//! gateway's own upstream client and started by the server, which stops them on shutdown.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Uri};
use http_body_util::{BodyExt, Full, Limited};
use tokio::sync::watch;

use std::sync::atomic::Ordering::Relaxed;

use crate::client::UpstreamClient;
use crate::env::{env_secret, EnvError};
use crate::metrics::Metrics;
use crate::providers::aws_creds::{self, Keys};
use crate::providers::google::{self, ServiceAccount};
use crate::providers::refresh::Refreshing;
use crate::providers::target::{read_service_account, Problem};
use crate::providers::{Credential, KeyHeader, UpstreamAuth};

/// The largest token-endpoint answer read (Google's is a few hundred bytes).
const MAX_TOKEN_ANSWER: usize = 64 * 1024;

/// A background refresh, started by the server; it ends when the receiver says stop (or
/// its sender is dropped).
pub(crate) type RefreshTask =
    Box<dyn FnOnce(watch::Receiver<bool>) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// Why a target's credential could not be compiled (the environment or a file changed
/// since validation). Never quotes a secret.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CredentialError {
    #[error("model {model:?}: {source}")]
    Env { model: String, source: EnvError },
    #[error("model {model:?}: the key in {var} is not a valid HTTP header value")]
    UpstreamKey { model: String, var: String },
    #[error("model {model:?}: {source}")]
    KeyFile { model: String, source: Problem },
    #[error("model {model:?}: token_uri is not a valid URL")]
    TokenUri { model: String },
}

/// What compiling the targets' credentials shares between them: one token source (and one
/// refresh task) per key file, however many targets name it.
pub(crate) struct Sources<'a> {
    pub(crate) client: &'a UpstreamClient,
    pub(crate) metrics: Arc<Metrics>,
    /// The longest a token exchange may take.
    pub(crate) fetch_timeout: Duration,
    /// The shortest lifetime a fetched credential may have (`upstream.min_credential_lifetime_ms`).
    pub(crate) min_lifetime: Duration,
    pub(crate) tasks: Vec<RefreshTask>,
    by_file: HashMap<PathBuf, (Arc<Refreshing<Credential>>, Option<String>)>,
}

impl<'a> Sources<'a> {
    pub(crate) fn new(
        client: &'a UpstreamClient,
        metrics: Arc<Metrics>,
        fetch_timeout: Duration,
        min_lifetime: Duration,
    ) -> Self {
        Sources {
            client,
            metrics,
            fetch_timeout,
            min_lifetime,
            tasks: Vec::new(),
            by_file: HashMap::new(),
        }
    }

    /// Adds the task that keeps `refreshing` fresh with `fetch` (given the upstream client
    /// and the fetch timeout), counting each fetch's outcome and logging a failure as
    /// "gateway: {label}: {what} refresh failed: …". A credential that lives less than
    /// `min_lifetime` is such a failure: kept, it would be fetched again at once, forever.
    fn push_refresh<F, Fut>(
        &mut self,
        refreshing: &Arc<Refreshing<Credential>>,
        label: String,
        what: &'static str,
        fetch: F,
    ) where
        F: Fn(UpstreamClient, Duration) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(Credential, Duration), FetchError>> + Send + 'static,
    {
        let (r, client) = (refreshing.clone(), self.client.clone());
        let (fetch_timeout, floor) = (self.fetch_timeout, self.min_lifetime);
        let (ok, failed) = (self.metrics.clone(), self.metrics.clone());
        self.tasks.push(Box::new(move |stop| {
            Box::pin(r.run(
                move || {
                    let (fetched, ok) = (fetch(client.clone(), fetch_timeout), ok.clone());
                    async move {
                        let r = fetched.await.and_then(|(cred, lifetime)| {
                            if lifetime < floor {
                                return Err(FetchError::ShortLived { lifetime, floor });
                            }
                            Ok((cred, lifetime))
                        });
                        if r.is_ok() {
                            ok.credential_refreshes_ok.fetch_add(1, Relaxed);
                        }
                        r
                    }
                },
                move |e: &FetchError| {
                    failed.credential_refreshes_failed.fetch_add(1, Relaxed);
                    eprintln!("gateway: {label}: {what} refresh failed: {e}");
                },
                stop,
            ))
        }));
    }
}

/// A target's credential, compiled.
pub(crate) struct Compiled {
    pub(crate) auth: UpstreamAuth,
    /// The service account's `project_id`, Vertex's default project.
    pub(crate) key_project: Option<String>,
}

/// A target's credential and, for a refreshing one, the task that keeps it fresh (shared
/// with the targets before it that named the same key file).
pub(crate) fn compile(
    model: &str,
    index: usize,
    t: &crate::providers::Target,
    sources: &mut Sources<'_>,
) -> Result<Compiled, CredentialError> {
    let model_err = |source| CredentialError::Env {
        model: model.to_owned(),
        source,
    };
    let from_env = |var: &String, header: KeyHeader| {
        let key = env_secret(var).map_err(model_err)?;
        let cred = Credential::new(header, &key).map_err(|_| CredentialError::UpstreamKey {
            model: model.to_owned(),
            var: var.clone(),
        })?;
        Ok(Compiled {
            auth: UpstreamAuth::Static(Arc::new(cred)),
            key_project: None,
        })
    };
    if let Some(var) = t.api_key_env.as_ref().or(t.access_token_env.as_ref()) {
        return from_env(var, t.key_header());
    }
    // Bedrock without an API key: AWS keys that sign. Static ones are read once (they do
    // not expire); a web identity's or a container's are fetched and kept fresh.
    if let Some(keys) = t.aws_keys().map_err(|e| CredentialError::KeyFile {
        model: model.to_owned(),
        source: Problem::from(e),
    })? {
        let region: Arc<str> = t.region.as_deref().unwrap_or_default().into();
        let endpoint = match keys {
            Keys::Static(keys) => {
                return Ok(Compiled {
                    auth: UpstreamAuth::Static(Arc::new(Credential::sigv4(&keys, &region))),
                    key_project: None,
                })
            }
            Keys::WebIdentity(w) => AwsEndpoint::WebIdentity(Arc::new(w)),
            Keys::Container(c) => AwsEndpoint::Container(Arc::new(c)),
        };
        let refreshing = Arc::new(Refreshing::default());
        let label = format!("model {model:?} target {index} ({})", t.provider.name());
        sources.push_refresh(
            &refreshing,
            label,
            "AWS credentials",
            move |client, timeout| {
                fetch_aws_keys(client, endpoint.clone(), region.clone(), timeout)
            },
        );
        return Ok(Compiled {
            auth: UpstreamAuth::Refreshing(refreshing),
            key_project: None,
        });
    }
    let Some(path) = t.credentials_path().map_err(model_err)? else {
        return Ok(Compiled {
            auth: UpstreamAuth::None,
            key_project: None,
        });
    };
    if let Some((r, project)) = sources.by_file.get(&path) {
        return Ok(Compiled {
            auth: UpstreamAuth::Refreshing(r.clone()),
            key_project: project.clone(),
        });
    }
    let sa = read_service_account(&path).map_err(|source| CredentialError::KeyFile {
        model: model.to_owned(),
        source,
    })?;
    let token_uri: Uri = sa
        .token_uri
        .parse()
        .ok()
        .filter(|u: &Uri| u.host().is_some())
        .ok_or_else(|| CredentialError::TokenUri {
            model: model.to_owned(),
        })?;
    let refreshing = Arc::new(Refreshing::default());
    let key_project = sa.project_id.clone();
    sources
        .by_file
        .insert(path.clone(), (refreshing.clone(), key_project.clone()));
    let sa = Arc::new(sa);
    // Names the file and its first user; never the key's content.
    let label = format!(
        "{} (model {model:?} target {index}, {})",
        path.display(),
        t.provider.name()
    );
    sources.push_refresh(
        &refreshing,
        label,
        "access token",
        move |client, timeout| fetch_token(client, sa.clone(), token_uri.clone(), timeout),
    );
    Ok(Compiled {
        auth: UpstreamAuth::Refreshing(refreshing),
        key_project,
    })
}

/// Why one token fetch failed. Quotes only the endpoint's error fields, never the
/// assertion or a token.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    #[error("token endpoint unreachable: {0}")]
    Connect(String),
    #[error("token endpoint did not answer within {0:?}")]
    Timeout(Duration),
    #[error(transparent)]
    Token(#[from] google::TokenError),
    #[error("the access token is not a valid HTTP header value")]
    BadToken,
    #[error(transparent)]
    Aws(#[from] aws_creds::AwsCredsError),
    #[error(
        "the credential granted lives {} ms, under the {} ms minimum (upstream.min_credential_lifetime_ms)",
        lifetime.as_millis(),
        floor.as_millis()
    )]
    ShortLived { lifetime: Duration, floor: Duration },
}

/// Where a Bedrock target's expiring AWS keys are fetched.
#[derive(Clone)]
enum AwsEndpoint {
    WebIdentity(Arc<aws_creds::WebIdentity>),
    Container(Arc<aws_creds::Container>),
}

/// Fetches AWS keys (STS for a web identity, or the container endpoint) and makes them a
/// SigV4 credential for `region`. The token file is read on each fetch (it rotates).
async fn fetch_aws_keys(
    client: UpstreamClient,
    endpoint: AwsEndpoint,
    region: Arc<str>,
    timeout: Duration,
) -> Result<(Credential, Duration), FetchError> {
    let (method, uri, body, auth, form) = match &endpoint {
        AwsEndpoint::WebIdentity(w) => (
            Method::POST,
            format!("{}/", w.endpoint),
            w.request_body()?,
            None,
            true,
        ),
        AwsEndpoint::Container(c) => (
            Method::GET,
            c.uri.clone(),
            String::new(),
            c.authorization()?,
            false,
        ),
    };
    let uri: Uri = uri
        .parse()
        .map_err(|_| FetchError::Connect("the credentials endpoint is not a valid URL".into()))?;
    let mut req = Request::new(Full::new(Bytes::from(body)));
    *req.method_mut() = method;
    let host = crate::headers::host(&uri);
    *req.uri_mut() = uri;
    let h = req.headers_mut();
    if form {
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
    }
    h.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    if let Some(a) = auth {
        let mut v = HeaderValue::try_from(a).map_err(|_| FetchError::BadToken)?;
        v.set_sensitive(true);
        h.insert(header::AUTHORIZATION, v);
    }
    if let Some(host) = host {
        h.insert(header::HOST, host);
    }
    let (status, body) = exchange(&client, req, timeout).await?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (keys, lifetime) = match endpoint {
        AwsEndpoint::WebIdentity(_) => aws_creds::read_sts_answer(status, &body, now)?,
        AwsEndpoint::Container(_) => aws_creds::read_container_answer(status, &body, now)?,
    };
    Ok((Credential::sigv4(&keys, &region), lifetime))
}

/// Exchanges a fresh assertion for an access token at `token_uri`.
async fn fetch_token(
    client: UpstreamClient,
    sa: Arc<ServiceAccount>,
    token_uri: Uri,
    timeout: Duration,
) -> Result<(Credential, Duration), FetchError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut req = Request::new(Full::new(Bytes::from(sa.token_request_body(now))));
    *req.method_mut() = Method::POST;
    let host = crate::headers::host(&token_uri);
    *req.uri_mut() = token_uri;
    let h = req.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-www-form-urlencoded"),
    );
    if let Some(host) = host {
        h.insert(header::HOST, host);
    }
    let (status, body) = exchange(&client, req, timeout).await?;
    let (token, lifetime) = google::read_token_answer(status, &body)?;
    let cred = Credential::new(KeyHeader::Bearer, &token).map_err(|_| FetchError::BadToken)?;
    Ok((cred, lifetime))
}

/// Sends a token or credentials request and reads the answer's status and body (at most
/// `MAX_TOKEN_ANSWER` bytes), all within `timeout`.
async fn exchange(
    client: &UpstreamClient,
    req: Request<Full<Bytes>>,
    timeout: Duration,
) -> Result<(u16, Bytes), FetchError> {
    let exchange = async {
        let resp = client
            .request(req)
            .await
            .map_err(|e| FetchError::Connect(e.to_string()))?;
        let status = resp.status().as_u16();
        let body = Limited::new(resp.into_body(), MAX_TOKEN_ANSWER)
            .collect()
            .await
            .map_err(|e| FetchError::Connect(e.to_string()))?
            .to_bytes();
        Ok((status, body))
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(r) => r,
        Err(_) => Err(FetchError::Timeout(timeout)),
    }
}
