//! The network's edge: the one guard on addresses a customer names (a property's site, a
//! webhook's URL), which every outbound client that reaches such an address uses, and the
//! HTTP plumbing of the services xf calls (feature `net`).
//!
//! The guard refuses loopback, private, link-local, CGNAT, multicast, documentation and
//! metadata addresses unless private targets are allowed: for a host name, on the addresses
//! its resolver returns, which are the only ones a connection may use (so a DNS answer that
//! changes between check and connect cannot sneak in, and neither can a redirect); for an IP
//! literal, before any connection ([`is_private_literal`]).

// The plumbing below serves the crawler, webhooks, Search Console and the platforms alike;
// a build with only some of them leaves parts of it unused.
#![cfg_attr(
    not(all(
        feature = "crawler",
        feature = "webhooks",
        feature = "gsc",
        feature = "publishing"
    )),
    allow(dead_code, unused_imports)
)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::Url;

#[cfg(feature = "net")]
mod services;
#[cfg(feature = "net")]
pub(crate) mod token;
#[cfg(feature = "net")]
pub(crate) use services::*;

/// Whether scans may reach this address: not loopback, private (RFC 1918, unique local),
/// link-local (which holds the cloud metadata address 169.254.169.254), CGNAT
/// (100.64.0.0/10), unspecified, broadcast, multicast, documentation, benchmarking or
/// reserved ranges; IPv4 embedded in IPv6 (mapped, NAT64) is judged as IPv4.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let segments = ip.segments();
    // NAT64 (64:ff9b::/96) carries an IPv4 address in its last 32 bits.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., hi, lo] = segments;
        return is_public_v4(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo)));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (segments[0] & 0xfe00) == 0xfc00
        || (segments[0] & 0xffc0) == 0xfe80
        || (segments[0] == 0x2001 && segments[1] == 0x0db8))
}

/// Whether `url`'s host is an IP address (not a name) that is not [`is_public`].
pub fn is_private_literal(url: &Url) -> bool {
    let literal = match url.host() {
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
        Some(url::Host::Domain(_)) | None => return false,
    };
    !is_public(literal)
}

#[cfg(feature = "net")]
pub(crate) use guard::{classify, Outbound, PublicOnly};

/// The guard's resolver, and what a failed request was.
#[cfg(feature = "net")]
mod guard {
    use std::net::SocketAddr;

    use reqwest::dns::{Addrs, Name, Resolve, Resolving};

    use super::is_public;

    /// The resolver's refusal of a host whose every address is forbidden.
    #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
    #[error("{0} is or resolves to a private or reserved address, which is not reached")]
    pub(crate) struct Refused(pub String);

    /// Resolves host names and keeps only the addresses an outbound client may reach.
    #[derive(Debug)]
    pub(crate) struct PublicOnly;

    impl Resolve for PublicOnly {
        fn resolve(&self, name: Name) -> Resolving {
            let host = name.as_str().to_owned();
            Box::pin(async move {
                let resolved: Vec<SocketAddr> =
                    tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
                let allowed: Vec<SocketAddr> =
                    resolved.into_iter().filter(|a| is_public(a.ip())).collect();
                if allowed.is_empty() {
                    return Err(Box::new(Refused(host)) as _);
                }
                Ok(Box::new(allowed.into_iter()) as Addrs)
            })
        }
    }

    /// What a failed outbound request was.
    #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
    pub(crate) enum Outbound {
        /// The guard refused the host (named here).
        #[error("{0} is or resolves to a private or reserved address, which is not reached")]
        Refused(String),
        /// No answer in time.
        #[error("timed out")]
        Timeout,
        /// Anything else: DNS, connection, TLS, protocol; the whole chain of causes.
        #[error("{0}")]
        Network(String),
    }

    /// What a reqwest error was: a refused address, a timeout, or another network failure.
    pub(crate) fn classify(error: &reqwest::Error) -> Outbound {
        if error.is_timeout() {
            return Outbound::Timeout;
        }
        // The resolver's refusal arrives wrapped; find it in the chain of sources.
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(current) = source {
            if let Some(Refused(host)) = current.downcast_ref::<Refused>() {
                return Outbound::Refused(host.clone());
            }
            source = current.source();
        }
        let mut text = error.to_string();
        let mut cause = std::error::Error::source(error);
        while let Some(inner) = cause {
            text = format!("{text}: {inner}");
            cause = inner.source();
        }
        Outbound::Network(text)
    }
}
