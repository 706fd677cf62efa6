//! The mock upstream's HTTPS, as every cloud provider serves it: a CA and a server
//! certificate for `127.0.0.1` and `localhost`, made when the mock starts (nothing
//! pre-generated, no network: it runs inside the training sandbox), and rustls on the server
//! side. The gateway trusts the CA through `upstream.extra_ca_file`.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// A CA and the server config whose certificate it signed.
pub struct MockTls {
    ca_pem: String,
    pub(crate) acceptor: tokio_rustls::TlsAcceptor,
}

impl std::fmt::Debug for MockTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockTls").finish_non_exhaustive()
    }
}

impl MockTls {
    /// A fresh CA (ECDSA P-256, as the large providers' edges present) and a server
    /// certificate for `127.0.0.1` and `localhost` signed by it.
    pub fn generate() -> Result<Arc<MockTls>, String> {
        let err = |what: &str, e: &dyn std::fmt::Display| format!("mock TLS: {what}: {e}");
        let ca_key = KeyPair::generate().map_err(|e| err("CA key", &e))?;
        let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(|e| err("CA", &e))?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "trainer mock upstream CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key).map_err(|e| err("CA", &e))?;

        let key = KeyPair::generate().map_err(|e| err("server key", &e))?;
        let mut leaf =
            CertificateParams::new(vec!["localhost".to_owned()]).map_err(|e| err("server", &e))?;
        leaf.subject_alt_names
            .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        leaf.distinguished_name
            .push(DnType::CommonName, "trainer mock upstream");
        leaf.is_ca = IsCa::ExplicitNoCa;
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let leaf_cert = leaf
            .signed_by(&key, &ca_cert, &ca_key)
            .map_err(|e| err("server certificate", &e))?;

        let mut server = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| err("protocol versions", &e))?
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf_cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .map_err(|e| err("server config", &e))?;
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(MockTls {
            ca_pem: ca_cert.pem(),
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(server)),
        }))
    }

    /// The CA certificate, PEM: what the gateway's `upstream.extra_ca_file` holds.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }
}
