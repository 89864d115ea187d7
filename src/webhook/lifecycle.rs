//! When to create, renew and roll over the webhook's certificates: a pure
//! function of the time, the stored state and how long the webhook
//! configuration has carried the stored CA bundle.
//!
//! Timeline of a CA rollover (all replicas serve what the Secret holds):
//! 1. `StartRollover` (the signing CA has less than `ca_renew_before` left):
//!    a new CA is made and added to the bundle; serving certificates are still
//!    signed by the old one. The leader puts the bundle into the webhook
//!    configuration's caBundle.
//! 2. `Promote`, once the configuration has carried that bundle for `settle`
//!    (so the apiserver trusts the new CA): the new CA signs a new serving
//!    certificate and becomes the signing CA. The old CA stays in the bundle.
//! 3. The old CA leaves the bundle when it expires: every certificate it
//!    signed is clamped to its notAfter, so by then nothing it signed can be
//!    valid, whichever replica still serves it.
//!
//! If the configuration never carries the bundle (it is missing), the new CA
//! is promoted anyway once the old one has less than `cert_renew_before` left:
//! there is no better choice then.
//!
//! A CA is only good if its name constraints permit exactly the serving
//! certificate's names (`certs::name_constraints`): a signing CA without
//! them (made by a release before issue 26) or for other names (the Service
//! was renamed) is rolled over the same safe way, published before it signs.
//! Until then, the serving certificate is not reissued for new names from a
//! CA whose constraints would not permit them.

/// The periods, in seconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    pub ca_validity: i64,
    pub ca_renew_before: i64,
    pub cert_validity: i64,
    pub cert_renew_before: i64,
    /// How long the configuration must carry a new bundle before a
    /// certificate signed by its new CA is served.
    pub settle: i64,
    /// The serving certificate's DNS names and IP addresses, sorted.
    pub sans: Vec<String>,
}

impl Policy {
    /// Refuses periods under which certificates would be renewed in a loop.
    pub fn check(&self) -> Result<(), String> {
        if self.cert_renew_before >= self.cert_validity {
            return Err(
                "--webhook-cert-renew-before must be shorter than --webhook-cert-validity".into(),
            );
        }
        if self.ca_renew_before >= self.ca_validity {
            return Err(
                "--webhook-ca-renew-before must be shorter than --webhook-ca-validity".into(),
            );
        }
        if self.ca_renew_before <= self.cert_renew_before + self.settle {
            return Err(format!(
                "--webhook-ca-renew-before must exceed --webhook-cert-renew-before by more than {}s (the time a new CA needs to reach the apiserver)",
                self.settle
            ));
        }
        Ok(())
    }
}

/// One certificate, as the decisions see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cert {
    pub not_before: i64,
    pub not_after: i64,
    pub der: Vec<u8>,
    /// A CA's name constraints, as `certs::Info::limited_to` reads them.
    pub limited_to: Option<Vec<String>>,
}

/// The stored state, read and checked (`store::observe`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// The signing CA, when its key is there and matches.
    pub signing: Option<Cert>,
    /// The CA of a rollover in progress, when its key is there and matches.
    pub next: Option<Cert>,
    /// The serving certificate, when its key is there and matches.
    pub leaf: Option<Leaf>,
    /// The CA bundle (ca.crt).
    pub bundle: Vec<Cert>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leaf {
    pub cert: Cert,
    pub sans: Vec<String>,
    pub signed_by_signing: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Nothing,
    /// No usable CA and nothing valid served: a new CA and serving certificate.
    Create,
    /// A new CA into the bundle, not signing yet.
    StartRollover,
    /// The new CA signs a new serving certificate and becomes the signing CA.
    Promote,
    /// A new serving certificate from the signing CA.
    Reissue,
    /// The bundle: the signing and next CAs, and every other CA not expired.
    Rebundle,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Nothing => "nothing",
            Action::Create => "create",
            Action::StartRollover => "rollover",
            Action::Promote => "promote",
            Action::Reissue => "reissue",
            Action::Rebundle => "rebundle",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub action: Action,
    /// When to decide again at the latest (unix seconds), if nothing changes before.
    pub recheck_at: Option<i64>,
}

fn valid(c: &Cert, now: i64) -> bool {
    c.not_before <= now && now < c.not_after
}

/// The bundle the state should have: the CAs of `bundle` that have not
/// expired, then the signing and next CAs if missing.
pub fn trusted(o: &Observed, now: i64) -> Vec<Cert> {
    let mut out: Vec<Cert> = Vec::new();
    let candidates = o.bundle.iter().chain(o.signing.iter()).chain(o.next.iter());
    for c in candidates {
        if now < c.not_after && !out.iter().any(|x| x.der == c.der) {
            out.push(c.clone());
        }
    }
    out
}

/// What to do now. `published_for`: how long (seconds) the webhook
/// configuration has carried exactly the stored bundle; None if it does not.
pub fn decide(o: &Observed, now: i64, p: &Policy, published_for: Option<i64>) -> Decision {
    let action = action(o, now, p, published_for);
    Decision {
        action,
        recheck_at: if action == Action::Nothing {
            recheck_at(o, now, p, published_for)
        } else {
            Some(now)
        },
    }
}

fn action(o: &Observed, now: i64, p: &Policy, published_for: Option<i64>) -> Action {
    let in_bundle = |c: &Cert| o.bundle.iter().any(|b| b.der == c.der);
    let published = published_for.is_some_and(|s| s >= p.settle);
    // A serving certificate still good for a while, worth keeping while a new CA settles.
    let leaf_lasts = o
        .leaf
        .as_ref()
        .is_some_and(|l| valid(&l.cert, now) && l.cert.not_after - now > 2 * p.settle);
    // A CA limited to exactly the names served.
    let fits = |c: &Cert| c.limited_to.as_ref() == Some(&p.sans);
    let next = o.next.as_ref().filter(|c| fits(c));
    let signing = o.signing.as_ref().filter(|c| valid(c, now));
    let Some(signing) = signing else {
        return match next {
            // No signing CA left: a new one, published before it signs if the
            // served certificate lasts that long. (A next CA that does not
            // fit the names is replaced.)
            None if leaf_lasts => Action::StartRollover,
            None => Action::Create,
            Some(n) if !in_bundle(n) => Action::Rebundle,
            Some(_) if published || !leaf_lasts => Action::Promote,
            Some(_) => Action::Nothing,
        };
    };
    if let Some(next) = next {
        if !in_bundle(next) {
            return Action::Rebundle;
        }
        if published || signing.not_after - now <= p.cert_renew_before {
            return Action::Promote;
        }
    } else if signing.not_after - now <= p.ca_renew_before || !fits(signing) {
        // (Also replaces a next CA for other names.)
        return Action::StartRollover;
    }
    // A CA constrained to other names cannot sign for these: new names wait
    // for the next CA's promotion.
    let can_sign_names = signing.limited_to.is_none() || fits(signing);
    let renew = match &o.leaf {
        None => true,
        Some(l) => {
            !l.signed_by_signing
                || !valid(&l.cert, now)
                || l.cert.not_after - now <= p.cert_renew_before
                    // Clamped to the signing CA's end: renewing would not help.
                    && l.cert.not_after < signing.not_after
                || l.sans != p.sans && can_sign_names
        }
    };
    if renew {
        return Action::Reissue;
    }
    if trusted(o, now) != o.bundle {
        return Action::Rebundle;
    }
    Action::Nothing
}

fn recheck_at(o: &Observed, now: i64, p: &Policy, published_for: Option<i64>) -> Option<i64> {
    let mut at: Vec<i64> = Vec::new();
    if let Some(l) = &o.leaf {
        at.extend([l.cert.not_after - p.cert_renew_before, l.cert.not_after]);
    }
    if let Some(s) = &o.signing {
        at.extend([
            s.not_after - p.ca_renew_before,
            s.not_after - p.cert_renew_before,
        ]);
        at.push(s.not_after);
    }
    if o.next.is_some() {
        if let Some(f) = published_for {
            at.push(now + (p.settle - f).max(0));
        }
        if let Some(l) = &o.leaf {
            at.push(l.cert.not_after - 2 * p.settle);
        }
    }
    at.extend(o.bundle.iter().map(|c| c.not_after));
    // Each is the first second at which a condition above holds.
    at.into_iter().filter(|t| *t > now).min()
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3600;

    fn policy() -> Policy {
        Policy {
            ca_validity: 1000 * H,
            ca_renew_before: 300 * H,
            cert_validity: 100 * H,
            cert_renew_before: 30 * H,
            settle: 5,
            sans: vec!["svc.ns.svc".into()],
        }
    }

    fn cert(id: u8, not_before: i64, not_after: i64) -> Cert {
        Cert {
            not_before,
            not_after,
            der: vec![id],
            limited_to: Some(policy().sans),
        }
    }

    fn leaf(id: u8, not_before: i64, not_after: i64) -> Leaf {
        Leaf {
            cert: cert(id, not_before, not_after),
            sans: policy().sans,
            signed_by_signing: true,
        }
    }

    /// A settled state at `now`: CA 1 from 0, its leaf from `issued`.
    fn settled(issued: i64) -> Observed {
        let ca = cert(1, 0, 1000 * H);
        Observed {
            signing: Some(ca.clone()),
            next: None,
            leaf: Some(leaf(10, issued, issued + 100 * H)),
            bundle: vec![ca],
        }
    }

    fn act(o: &Observed, now: i64, published_for: Option<i64>) -> Action {
        decide(o, now, &policy(), published_for).action
    }

    #[test]
    fn nothing_stored_or_everything_expired_starts_afresh() {
        assert_eq!(act(&Observed::default(), 0, None), Action::Create);
        // A pre-seeded expired certificate: replaced, never kept.
        let expired = settled(0);
        assert_eq!(act(&expired, 2000 * H, None), Action::Create);
    }

    #[test]
    fn a_settled_state_waits_until_the_renewal_time() {
        let o = settled(0);
        let d = decide(&o, 10 * H, &policy(), Some(100));
        assert_eq!(d.action, Action::Nothing);
        assert_eq!(d.recheck_at, Some(70 * H));
        assert_eq!(act(&o, 70 * H - 1, Some(100)), Action::Nothing);
        // At the time it said to look again, not a second later.
        assert_eq!(act(&o, 70 * H, Some(100)), Action::Reissue);
    }

    #[test]
    fn a_leaf_not_from_the_signing_ca_or_with_other_names_is_reissued() {
        let mut o = settled(0);
        o.leaf.as_mut().unwrap().signed_by_signing = false;
        assert_eq!(act(&o, H, None), Action::Reissue);
        let mut o = settled(0);
        o.leaf.as_mut().unwrap().sans = vec!["old".into()];
        assert_eq!(act(&o, H, None), Action::Reissue);
        let mut o = settled(0);
        o.leaf = None;
        assert_eq!(act(&o, H, None), Action::Reissue);
    }

    #[test]
    fn a_rollover_publishes_the_new_ca_before_it_signs() {
        let now = 701 * H; // 299h left on CA 1
        let o = settled(now - H);
        assert_eq!(act(&o, now, Some(1000)), Action::StartRollover);
        // Stored: CA 2 in the bundle, not signing.
        let mut o2 = o.clone();
        let ca2 = cert(2, now, now + 1000 * H);
        o2.next = Some(ca2.clone());
        o2.bundle.push(ca2.clone());
        // The configuration does not carry the new bundle yet, or not for long enough.
        assert_eq!(act(&o2, now, None), Action::Nothing);
        assert_eq!(act(&o2, now + 2, Some(2)), Action::Nothing);
        assert_eq!(
            decide(&o2, now + 2, &policy(), Some(2)).recheck_at,
            Some(now + 5)
        );
        assert_eq!(act(&o2, now + 5, Some(5)), Action::Promote);
        // Promoted: CA 2 signs; CA 1 stays trusted until it expires.
        let o3 = Observed {
            signing: Some(ca2.clone()),
            next: None,
            leaf: Some(leaf(11, now, now + 100 * H)),
            bundle: vec![cert(1, 0, 1000 * H), ca2.clone()],
        };
        assert_eq!(act(&o3, now + 6, Some(6)), Action::Nothing);
        let mut o4 = o3.clone();
        o4.leaf = Some(leaf(12, 990 * H, 1090 * H));
        assert_eq!(act(&o4, 1000 * H, Some(6)), Action::Rebundle);
        assert_eq!(trusted(&o4, 1000 * H), vec![ca2]);
    }

    #[test]
    fn an_unpublished_rollover_is_promoted_before_the_old_ca_runs_out() {
        let mut o = settled(0);
        let ca2 = cert(2, 701 * H, 1701 * H);
        o.next = Some(ca2.clone());
        o.bundle.push(ca2);
        o.leaf = Some(leaf(10, 900 * H, 1000 * H)); // clamped to CA 1
        assert_eq!(act(&o, 960 * H, None), Action::Nothing);
        assert_eq!(act(&o, 970 * H, None), Action::Promote);
    }

    #[test]
    fn a_next_ca_missing_from_the_bundle_is_added_before_anything_else() {
        let mut o = settled(0);
        o.next = Some(cert(2, 701 * H, 1701 * H));
        assert_eq!(act(&o, 702 * H, Some(100)), Action::Rebundle);
    }

    #[test]
    fn a_leaf_clamped_to_the_ca_end_is_not_renewed_in_a_loop() {
        let mut o = settled(0);
        o.leaf = Some(leaf(10, 950 * H, 1000 * H));
        let mut p = policy();
        p.ca_renew_before = 10 * H; // (refused by check; decide stays sane)
        assert_eq!(decide(&o, 975 * H, &p, None).action, Action::Nothing);
    }

    #[test]
    fn a_broken_signing_ca_with_a_good_leaf_rolls_over_instead_of_starting_afresh() {
        let mut o = settled(0);
        o.signing = None; // key lost
        assert_eq!(act(&o, H, Some(100)), Action::StartRollover);
        let ca2 = cert(2, H, 1001 * H);
        o.next = Some(ca2.clone());
        o.bundle.push(ca2);
        assert_eq!(act(&o, H, None), Action::Nothing);
        assert_eq!(act(&o, H + 5, Some(5)), Action::Promote);
    }

    #[test]
    fn the_periods_are_checked() {
        assert!(policy().check().is_ok());
        let mut p = policy();
        p.cert_renew_before = p.cert_validity;
        assert!(p.check().is_err());
        let mut p = policy();
        p.ca_renew_before = p.cert_renew_before + 5;
        assert!(p.check().is_err());
    }

    /// An upgrade from a release whose CA has no name constraints: the CA is
    /// rolled over (published first), never cut over, and a constrained CA
    /// for the right names is kept.
    #[test]
    fn a_ca_without_constraints_is_rolled_over_through_publication() {
        let mut o = settled(0);
        assert_eq!(act(&o, H, Some(100)), Action::Nothing);
        o.signing.as_mut().unwrap().limited_to = None;
        o.bundle[0].limited_to = None;
        assert_eq!(act(&o, H, Some(100)), Action::StartRollover);
        let ca2 = cert(2, H, 1001 * H);
        o.next = Some(ca2.clone());
        o.bundle.push(ca2.clone());
        // Not before the configuration has carried the new bundle.
        assert_eq!(act(&o, H, None), Action::Nothing);
        assert_eq!(act(&o, H + 2, Some(2)), Action::Nothing);
        assert_eq!(act(&o, H + 5, Some(5)), Action::Promote);
    }

    #[test]
    fn a_ca_for_other_names_is_rolled_over_and_signs_nothing_new_meanwhile() {
        let mut o = settled(0);
        let old = Some(vec!["old.ns.svc".to_string()]);
        o.signing.as_mut().unwrap().limited_to = old.clone();
        o.leaf.as_mut().unwrap().sans = old.clone().unwrap();
        assert_eq!(act(&o, H, Some(100)), Action::StartRollover);
        // A next CA for other names too (the names changed mid-rollover): replaced.
        let mut stale = cert(2, H, 1001 * H);
        stale.limited_to = old;
        o.next = Some(stale.clone());
        o.bundle.push(stale);
        assert_eq!(act(&o, H, Some(100)), Action::StartRollover);
        let ca3 = cert(3, H, 1001 * H);
        o.next = Some(ca3.clone());
        o.bundle.push(ca3);
        // The leaf keeps its old names until the fitting CA signs.
        assert_eq!(act(&o, H + 1, Some(1)), Action::Nothing);
        assert_eq!(act(&o, H + 5, Some(5)), Action::Promote);
    }

    #[test]
    fn a_leaf_for_new_names_comes_at_once_from_an_unconstrained_ca_only_after_rollover() {
        // An unconstrained CA may sign the new names (what it did before).
        let mut o = settled(0);
        o.signing.as_mut().unwrap().limited_to = None;
        o.leaf.as_mut().unwrap().sans = vec!["old".into()];
        let ca2 = cert(2, H, 1001 * H);
        o.next = Some(ca2.clone());
        o.bundle.push(ca2);
        assert_eq!(act(&o, H, None), Action::Reissue);
    }
}
