//! Client side of the Cleanroom API: endpoint resolution and typed Connect clients.
//!
//! Every CLI command goes through [`Client`]; nothing here executes anything locally.

pub mod console;
pub mod endpoint;
pub mod files;
pub mod policy;
pub mod session;
pub mod suggest;
mod tls;
pub mod tunnel;

use base64::Engine as _;
use cleanroom_proto::cleanroom::v1::{
    ApprovalServiceClient, AttestationServiceClient, ErrorDetail, ExecutionServiceClient,
    FileServiceClient, ImageServiceClient, SandboxLifetimeServiceClient, SandboxServiceClient,
    WarmPoolServiceClient,
};
pub use cleanroom_vocab::{ErrorCode, Runtime};
use connectrpc::client::{ClientConfig, Http2Connection, SharedHttp2Connection};
use connectrpc::ConnectError;
use endpoint::{Endpoint, Target};

pub use cleanroom_proto::cleanroom::v1 as api;
/// Seed 001's host-agent API (docs/hostagent.md).
pub use cleanroom_proto::hostagent::v1 as hostagent_api;
/// The connection every service client of a [`Client`] shares (to name their types).
pub use connectrpc::client::SharedHttp2Connection as Transport;

/// A typed API error: Connect code plus the stable Cleanroom code from `ErrorDetail`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    /// Stable machine code (`sandbox_not_found`, `server_unreachable`, ...).
    pub code: String,
    pub message: String,
    /// Connect protocol code (`not_found`, `unavailable`, ...).
    pub connect_code: String,
    pub details: Vec<(String, String)>,
}

impl ApiError {
    /// The stable code as a typed [`ErrorCode`]; `None` for a code this client does not
    /// know (a newer server) or a bare Connect code from a server that sent no detail.
    pub fn error_code(&self) -> Option<ErrorCode> {
        self.code.parse().ok()
    }

    /// Is this error `code`?
    pub fn is(&self, code: ErrorCode) -> bool {
        self.code == code
    }

    /// An error this client found itself (e.g. a stream that ended too early).
    pub fn local(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code: code.to_string(),
            message: message.into(),
            connect_code: connectrpc::ErrorCode::Unknown.as_str().into(),
            details: Vec::new(),
        }
    }
}

impl From<ConnectError> for ApiError {
    fn from(e: ConnectError) -> Self {
        let detail = e
            .details
            .iter()
            .find(|d| d.type_url.ends_with("cleanroom.v1.ErrorDetail"))
            .and_then(|d| {
                let raw = d.value.as_deref()?;
                let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
                    .decode(raw.trim_end_matches('='))
                    .ok()?;
                <ErrorDetail as buffa::Message>::decode_from_slice(&bytes).ok()
            });
        match detail {
            Some(d) => ApiError {
                code: d.code,
                message: d.message,
                connect_code: e.code.as_str().to_string(),
                details: d.details.into_iter().collect(),
            },
            None => {
                let connect_code = e.code.as_str().to_string();
                let code = if e.code == connectrpc::ErrorCode::Unavailable {
                    ErrorCode::ServerUnreachable.to_string()
                } else {
                    connect_code.clone()
                };
                ApiError {
                    code,
                    message: e.message.unwrap_or_default(),
                    connect_code,
                    details: Vec::new(),
                }
            }
        }
    }
}

/// Whether a TLS handshake failed because the peer answered in plain text (an `http://`
/// server): the first bytes back are no TLS record, which rustls reports as a corrupt
/// message of type `InvalidContentType` (an HTTP/1 `HTTP/1.1 400`, an HTTP/2 GOAWAY).
fn plaintext_answer(e: &ConnectError) -> bool {
    e.message
        .as_deref()
        .is_some_and(|m| m.contains("InvalidContentType"))
}

/// Clients for both services over one HTTP/2 connection.
pub struct Client {
    pub sandboxes: SandboxServiceClient<SharedHttp2Connection>,
    pub executions: ExecutionServiceClient<SharedHttp2Connection>,
    pub images: ImageServiceClient<SharedHttp2Connection>,
    /// Egress approval requests (docs/approvals.md).
    pub approvals: ApprovalServiceClient<SharedHttp2Connection>,
    pub snapshots: cleanroom_proto::cleanroom::v1::SnapshotServiceClient<SharedHttp2Connection>,
    pub files: FileServiceClient<SharedHttp2Connection>,
    pub pools: WarmPoolServiceClient<SharedHttp2Connection>,
    pub attestation: AttestationServiceClient<SharedHttp2Connection>,
    pub endpoint: Endpoint,
    /// `SetSandboxTimeout` (TTL / idle timeout changes).
    pub lifetimes: SandboxLifetimeServiceClient<SharedHttp2Connection>,
    /// Live egress rules (docs/network.md).
    pub network: cleanroom_proto::cleanroom::v1::NetworkServiceClient<SharedHttp2Connection>,
    /// Exposed ports (docs/network.md "Inbound").
    pub inbound: cleanroom_proto::cleanroom::v1::InboundServiceClient<SharedHttp2Connection>,
    /// Named volumes (docs/volumes.md).
    pub volumes: cleanroom_proto::cleanroom::v1::VolumeServiceClient<SharedHttp2Connection>,
    /// Cluster membership (docs/cluster.md).
    pub cluster: cleanroom_proto::cleanroom::v1::ClusterServiceClient<SharedHttp2Connection>,
    /// Seed 001's host-agent API (docs/hostagent.md): what a control plane written
    /// against the seed calls.
    pub hostagent: cleanroom_proto::hostagent::v1::HostAgentServiceClient<SharedHttp2Connection>,
}

impl Client {
    /// Connect to `endpoint` without credentials (unix socket or a server that needs none).
    pub async fn connect(endpoint: &Endpoint) -> Result<Client, ApiError> {
        Self::connect_target(&Target::from(endpoint.clone())).await
    }

    /// Connect to `target.endpoint` (HTTP/2: unix socket, h2c or TLS), presenting
    /// `target.token` as a bearer token on TCP endpoints.
    pub async fn connect_target(target: &Target) -> Result<Client, ApiError> {
        let endpoint = &target.endpoint;
        let unreachable = |e: ConnectError| ApiError {
            code: ErrorCode::ServerUnreachable.to_string(),
            message: format!(
                "cannot reach the cleanroom server at {}: {}. Start it with `cleanroom serve`.",
                endpoint.display(),
                e.message.unwrap_or_default()
            ),
            connect_code: connectrpc::ErrorCode::Unavailable.as_str().into(),
            details: Vec::new(),
        };
        let bad = |m: String| ApiError {
            code: ErrorCode::InvalidArgument.to_string(),
            message: m,
            connect_code: connectrpc::ErrorCode::InvalidArgument.as_str().into(),
            details: Vec::new(),
        };
        // Output streams are bulk transfers: HTTP/2's default 64 KiB windows and 16 KiB
        // frames would cap them.
        let builder = || {
            Http2Connection::builder()
                .initial_stream_window_size(8 << 20)
                .initial_connection_window_size(16 << 20)
                .h2_settings(|b| {
                    b.max_frame_size(1 << 20);
                })
        };
        let (conn, base) = match endpoint {
            Endpoint::Unix(path) => {
                let base: http::Uri = "http://localhost"
                    .parse()
                    .map_err(|e| bad(format!("{e}")))?;
                (
                    builder()
                        .connect_unix(path.clone(), base.clone())
                        .await
                        .map_err(unreachable)?,
                    base,
                )
            }
            Endpoint::Http(auth) => {
                let base: http::Uri = format!("http://{auth}")
                    .parse()
                    .map_err(|e| bad(format!("bad endpoint: {e}")))?;
                (
                    builder()
                        .connect_plaintext(base.clone())
                        .await
                        .map_err(unreachable)?,
                    base,
                )
            }
            Endpoint::Https(auth) => {
                let base: http::Uri = format!("https://{auth}")
                    .parse()
                    .map_err(|e| bad(format!("bad endpoint: {e}")))?;
                let connector = tls::connector(
                    auth,
                    target.ca_cert.as_deref(),
                    target.server_cert_sha256.as_deref(),
                )
                .map_err(bad)?;
                (
                    builder()
                        .connect_with_connector(connector, base.clone())
                        .await
                        .map_err(|e| match plaintext_answer(&e) {
                            true => bad(format!(
                                "the server at https://{auth} does not speak TLS (it answered a TLS handshake in plain text); use http://{auth}"
                            )),
                            false => unreachable(e),
                        })?,
                    base,
                )
            }
        };
        let shared = conn.shared(1024);
        let mut config = ClientConfig::new(base).with_default_max_message_size(16 << 20);
        // Over a unix socket the bytes never leave the host: compressing responses (the
        // server gzips any answer over 1 KiB a client accepts gzip for, e.g. a claim's
        // sandbox and attestation) costs both sides CPU and saves nothing.
        if matches!(endpoint, Endpoint::Unix(_)) {
            config = config.with_compression(connectrpc::CompressionRegistry::new());
        }
        if let (Some(token), false) = (&target.token, matches!(endpoint, Endpoint::Unix(_))) {
            let value = http::HeaderValue::try_from(format!("Bearer {token}"))
                .map_err(|_| bad("the token contains characters not allowed in a header".into()))?;
            config = config.with_default_header(http::header::AUTHORIZATION, value);
        }
        // Every call continues the caller's trace (the header is validated by the server,
        // which ignores a malformed one).
        if let Some(tp) = &target.traceparent {
            let value = http::HeaderValue::try_from(tp.as_str()).map_err(|_| {
                bad("the traceparent contains characters not allowed in a header".into())
            })?;
            config =
                config.with_default_header(http::HeaderName::from_static("traceparent"), value);
        }
        Ok(Client {
            sandboxes: SandboxServiceClient::new(shared.clone(), config.clone()),
            executions: ExecutionServiceClient::new(shared.clone(), config.clone()),
            images: ImageServiceClient::new(shared.clone(), config.clone()),
            approvals: ApprovalServiceClient::new(shared.clone(), config.clone()),
            snapshots: cleanroom_proto::cleanroom::v1::SnapshotServiceClient::new(
                shared.clone(),
                config.clone(),
            ),
            // File bytes are mostly incompressible (or already compressed): gzip of every
            // chunk would cost far more CPU than it saves on the wire.
            files: FileServiceClient::new(
                shared.clone(),
                config
                    .clone()
                    .with_compression(connectrpc::CompressionRegistry::new()),
            ),
            pools: WarmPoolServiceClient::new(shared.clone(), config.clone()),
            attestation: AttestationServiceClient::new(shared.clone(), config.clone()),
            endpoint: endpoint.clone(),
            volumes: cleanroom_proto::cleanroom::v1::VolumeServiceClient::new(
                shared.clone(),
                config.clone(),
            ),
            cluster: cleanroom_proto::cleanroom::v1::ClusterServiceClient::new(
                shared.clone(),
                config.clone(),
            ),
            hostagent: cleanroom_proto::hostagent::v1::HostAgentServiceClient::new(
                shared.clone(),
                config.clone(),
            ),
            network: cleanroom_proto::cleanroom::v1::NetworkServiceClient::new(
                shared.clone(),
                config.clone(),
            ),
            inbound: cleanroom_proto::cleanroom::v1::InboundServiceClient::new(
                shared.clone(),
                config.clone(),
            ),
            lifetimes: SandboxLifetimeServiceClient::new(shared, config),
        })
    }
}
