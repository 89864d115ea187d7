//! Where a connection may send requests: its address is a scheme, a host and
//! a port, nothing more; http only when the administrator allows it; and a
//! namespaced VaultConnection (a tenant's input) never reaches the
//! controller's own loopback, link-local or metadata addresses, checked after
//! name resolution, with the checked address pinned for the request.
//!
//! Pure, except [`pin`], which resolves a name (never connects).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// What the administrator allows (controller flags).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// `--allow-http-vault`: http:// addresses (never with Kubernetes auth).
    pub allow_http: bool,
    /// `--vault-allowed-networks`: when set, a VaultConnection's address
    /// must resolve into one of them (an address listed here is allowed even
    /// if it is loopback or link-local: the administrator opened it).
    pub allowed_networks: Vec<Network>,
}

/// An address as a connection may hold it: `scheme://host[:port]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    pub https: bool,
    /// A name or an IP address (no brackets).
    pub host: String,
    pub port: u16,
    /// `scheme://host:port`, rebuilt from the parts (never the raw text).
    pub base: String,
}

impl Address {
    /// The host as an IP address, when it is one.
    pub fn ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }
}

/// Why an address is refused; fixed texts (never the address itself).
pub const NOT_AN_ORIGIN: &str = "address must be https://host[:port] (or http://host[:port]): no path, query, fragment or user name";
pub const NO_HTTP: &str = "an http:// address needs the controller's --allow-http-vault (chart value vault.allowHttp); use https://";
pub const NOT_ALLOWED: &str = "the address resolves to an address a namespaced VaultConnection may not reach (loopback, link-local, unspecified, multicast or a cloud metadata address, or outside the controller's --vault-allowed-networks)";
pub const NOT_RESOLVED: &str = "the address's host name could not be resolved";

/// Parses `text`: an http(s) URL with a host and nothing after the port but
/// an optional '/'.
pub fn parse(text: &str) -> Result<Address, &'static str> {
    let url = reqwest::Url::parse(text).map_err(|_| NOT_AN_ORIGIN)?;
    let https = match url.scheme() {
        "https" => true,
        "http" => false,
        _ => return Err(NOT_AN_ORIGIN),
    };
    // The parser drops what it normalises away ("https://h:443/./"): the
    // raw text must have nothing after the authority but one '/'.
    let rest = text
        .split_once("://")
        .map(|(_, r)| r.find('/').map_or("", |i| &r[i..]))
        .unwrap_or_default();
    let clean = url.username().is_empty()
        && url.password().is_none()
        && url.query().is_none()
        && url.fragment().is_none()
        && (rest.is_empty() || rest == "/")
        && !text.contains(['?', '#', '@', '\\'])
        && !text.chars().any(|c| c.is_whitespace() || c.is_control());
    if !clean {
        return Err(NOT_AN_ORIGIN);
    }
    let host = url
        .host_str()
        .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_string())
        .filter(|h| !h.is_empty())
        .ok_or(NOT_AN_ORIGIN)?;
    let port = url.port_or_known_default().ok_or(NOT_AN_ORIGIN)?;
    let scheme = if https { "https" } else { "http" };
    let base = match host.parse::<IpAddr>() {
        Ok(IpAddr::V6(_)) => format!("{scheme}://[{host}]:{port}"),
        _ => format!("{scheme}://{host}:{port}"),
    };
    Ok(Address {
        https,
        host,
        port,
        base,
    })
}

/// Why a mount is refused (fixed text).
pub const BAD_MOUNT: &str = "a mount (kvMount, auth.kubernetes.mount) is segments of letters, digits, '-', '_' and '.', separated by '/', without '.' or '..' segments";

/// Whether a mount (part of every request's path) is plain path segments:
/// nothing that would change the request target ('?', '#', '..', '%').
pub fn mount_ok(mount: &str) -> bool {
    let m = mount.trim_matches('/');
    !m.is_empty()
        && m.split('/').all(|s| {
            !s.is_empty()
                && s != "."
                && s != ".."
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        })
}

/// An IP network (address/prefix length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    addr: IpAddr,
    prefix: u8,
}

impl std::str::FromStr for Network {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not an address or a network such as 10.0.0.0/8 or fd00::/8");
        let (a, p) = s.split_once('/').map_or((s, None), |(a, p)| (a, Some(p)));
        let addr: IpAddr = a.trim().parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            Some(p) => p.trim().parse::<u8>().map_err(|_| bad())?,
            None => max,
        };
        if prefix > max {
            return Err(bad());
        }
        Ok(Network { addr, prefix })
    }
}

impl Network {
    pub fn contains(&self, ip: IpAddr) -> bool {
        let bits = |ip: IpAddr| -> (u128, u8) {
            match ip {
                IpAddr::V4(v) => (u128::from(u32::from(v)), 32),
                IpAddr::V6(v) => (u128::from(v), 128),
            }
        };
        let (net, width) = bits(self.addr);
        let (addr, w) = bits(canonical(ip));
        if w != width {
            return false;
        }
        let shift = u32::from(width - self.prefix);
        shift >= 128 || (net >> shift) == (addr >> shift)
    }
}

/// An IPv4-mapped IPv6 address (::ffff:a.b.c.d) as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v) => v.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Addresses a tenant's connection never reaches unless the administrator
/// lists them: the controller's own host (loopback, unspecified), link-local
/// (169.254/16 with the cloud metadata service, fe80::/10), multicast and
/// broadcast, and the metadata services at other addresses.
pub fn refused_by_default(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v) => {
            v.is_loopback()
                || v.is_link_local()
                || v.is_unspecified()
                || v.octets()[0] == 0
                || v.is_multicast()
                || v.is_broadcast()
                // Alibaba Cloud's metadata service.
                || v == Ipv4Addr::new(100, 100, 100, 200)
        }
        IpAddr::V6(v) => {
            v.is_loopback()
                || v.is_unspecified()
                || v.is_multicast()
                || (v.segments()[0] & 0xffc0) == 0xfe80
                // AWS's IPv6 metadata service.
                || v == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)
        }
    }
}

/// Whether a namespaced VaultConnection may send to `ip`.
pub fn tenant_may_reach(policy: &Policy, ip: IpAddr) -> bool {
    if policy.allowed_networks.is_empty() {
        !refused_by_default(ip)
    } else {
        policy.allowed_networks.iter().any(|n| n.contains(ip))
    }
}

/// For a namespaced VaultConnection: resolves the host (bounded by
/// `timeout`), refuses it unless every address it resolves to may be
/// reached, and returns the address to pin the request to. An IP address
/// is checked as it is. Nothing is sent to the server here.
pub async fn pin(
    policy: &Policy,
    address: &Address,
    timeout: Duration,
) -> Result<SocketAddr, &'static str> {
    let resolved: Vec<SocketAddr> = match address.ip() {
        Some(ip) => vec![SocketAddr::new(ip, address.port)],
        None => tokio::time::timeout(
            timeout,
            tokio::net::lookup_host((address.host.as_str(), address.port)),
        )
        .await
        .map_err(|_| NOT_RESOLVED)?
        .map_err(|_| NOT_RESOLVED)?
        .collect(),
    };
    let first = *resolved.first().ok_or(NOT_RESOLVED)?;
    if resolved.iter().all(|a| tenant_may_reach(policy, a.ip())) {
        Ok(first)
    } else {
        Err(NOT_ALLOWED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_scheme_host_and_port() {
        for ok in [
            "https://vault.example:8200",
            "https://vault.example:8200/",
            "https://vault.example",
            "http://127.0.0.1:8200",
            "https://[fd00::1]:8200",
        ] {
            assert!(parse(ok).is_ok(), "{ok}");
        }
        assert_eq!(parse("https://vault.example").unwrap().port, 443);
        assert_eq!(
            parse("https://vault.example/").unwrap().base,
            "https://vault.example:443"
        );
        assert_eq!(
            parse("https://[fd00::1]:8200").unwrap().base,
            "https://[fd00::1]:8200"
        );
        for bad in [
            "https://vault.example:8200/v1/other#",
            "https://vault.example:8200/x?",
            "https://vault.example:8200?",
            "https://vault.example:8200#",
            "https://vault.example:8200/path",
            "https://user:pw@vault.example:8200",
            "https://user@vault.example",
            "https://vault.example:8200/./",
            "https://vault.example:8200/%2e%2e/",
            "ftp://vault.example",
            "file:///etc/passwd",
            "https://",
            "https:// vault.example",
            "vault.example:8200",
        ] {
            assert_eq!(parse(bad), Err(NOT_AN_ORIGIN), "{bad}");
        }
    }

    #[test]
    fn mounts_are_plain_segments() {
        for ok in ["secret", "kv/team-a", "secret/", "k_v.2"] {
            assert!(mount_ok(ok), "{ok}");
        }
        for bad in [
            "",
            "/",
            "secret/../sys",
            "secret?x",
            "secret#",
            "a//b",
            "%2e%2e",
            "s p",
        ] {
            assert!(!mount_ok(bad), "{bad}");
        }
    }

    #[test]
    fn networks_parse_and_match() {
        let n: Network = "10.0.0.0/8".parse().unwrap();
        assert!(n.contains("10.1.2.3".parse().unwrap()));
        assert!(n.contains("::ffff:10.1.2.3".parse().unwrap()));
        assert!(!n.contains("11.0.0.1".parse().unwrap()));
        assert!(!n.contains("fd00::1".parse().unwrap()));
        let one: Network = "127.0.0.1".parse().unwrap();
        assert!(one.contains("127.0.0.1".parse().unwrap()));
        assert!(!one.contains("127.0.0.2".parse().unwrap()));
        let all: Network = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("192.0.2.1".parse().unwrap()));
        let v6: Network = "fd00::/8".parse().unwrap();
        assert!(v6.contains("fd12::1".parse().unwrap()));
        for bad in ["10.0.0.0/33", "x", "fd00::/129", "10.0.0.0/"] {
            assert!(bad.parse::<Network>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_controllers_own_and_metadata_addresses_are_refused() {
        for ip in [
            "127.0.0.1",
            "127.9.9.9",
            "::1",
            "0.0.0.0",
            "::",
            "0.1.2.3",
            "169.254.169.254",
            "169.254.0.1",
            "fe80::1",
            "febf::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "fd00:ec2::254",
            "100.100.100.200",
            "224.0.0.1",
            "255.255.255.255",
            "ff02::1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(!tenant_may_reach(&Policy::default(), ip), "{ip}");
        }
        for ip in ["10.0.0.5", "192.168.1.1", "fd00::1", "203.0.113.7"] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(tenant_may_reach(&Policy::default(), ip), "{ip}");
        }
        // The administrator's list: only what it names, and what it names
        // even if refused by default.
        let policy = Policy {
            allow_http: false,
            allowed_networks: vec![
                "10.20.0.0/16".parse().unwrap(),
                "127.0.0.1".parse().unwrap(),
            ],
        };
        assert!(tenant_may_reach(&policy, "10.20.1.1".parse().unwrap()));
        assert!(tenant_may_reach(&policy, "127.0.0.1".parse().unwrap()));
        assert!(!tenant_may_reach(&policy, "10.21.0.1".parse().unwrap()));
        assert!(!tenant_may_reach(
            &policy,
            "169.254.169.254".parse().unwrap()
        ));
    }

    /// IP literals only: nothing is resolved through DNS, nothing is sent.
    #[tokio::test]
    async fn pin_checks_before_anything_is_sent() {
        let t = Duration::from_secs(1);
        for a in [
            "https://169.254.169.254",
            "https://127.0.0.1:8200",
            "https://[::1]:8200",
            "https://[fe80::1]:8200",
            "https://0.0.0.0:8200",
        ] {
            let address = parse(a).unwrap();
            assert_eq!(
                pin(&Policy::default(), &address, t).await,
                Err(NOT_ALLOWED),
                "{a}"
            );
        }
        let address = parse("https://192.0.2.10:8200").unwrap();
        assert_eq!(
            pin(&Policy::default(), &address, t).await,
            Ok("192.0.2.10:8200".parse().unwrap())
        );
    }
}
