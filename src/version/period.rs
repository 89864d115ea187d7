//! `rotateEvery`: parsing the period, and counting periods (epochs) since
//! the RandomSecret's creation.
//!
//! The allowed range is checked twice with the same rules: by [`parse_period`]
//! (the controller and the CLI) and by the CRD's CEL rule [`period_range_rule`]
//! (admission), so that the controller accepts what the apiserver admits.

/// A `rotateEvery` outside the format or the range (`SpecError::InvalidRotateEvery`
/// to the caller, which says what to fix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidPeriod(pub String);

/// The shortest period, in seconds (`1m`).
pub const MIN_PERIOD_SECONDS: u64 = 60;
/// The longest period, in hours: 100 years of 365 days. Every epoch
/// computation stays far from overflow with it, and so does the CRD's rule.
pub const MAX_PERIOD_HOURS: u64 = 876_000;
const MAX_PERIOD_SECONDS: u64 = MAX_PERIOD_HOURS * 3600;

/// The longest `rotateEvery`, in characters (the CRD's maxLength).
pub const MAX_PERIOD_TEXT: usize = 32;

/// The allowed range, as the error messages state it.
pub fn period_range_text() -> String {
    format!(
        "at least 1m and at most {MAX_PERIOD_HOURS}h ({} years)",
        MAX_PERIOD_HOURS / (365 * 24)
    )
}

/// Parses a duration such as `720h`, `90m` or `1h30m` into seconds: one or
/// more `<digits><h|m|s>`, adding up to at least 1m and at most 876000h, in
/// at most 32 characters (as the CRD's maxLength).
pub fn parse_period(text: &str) -> Result<u64, InvalidPeriod> {
    let bad = || InvalidPeriod(text.to_string());
    if text.len() > MAX_PERIOD_TEXT {
        return Err(bad());
    }
    seconds_of(text)
        .filter(|t| (MIN_PERIOD_SECONDS..=MAX_PERIOD_SECONDS).contains(t))
        .ok_or_else(bad)
}

/// The seconds of a duration written as `([0-9]+(h|m|s))+` (`720h`,
/// `1h30m`, `20s`); None for any other text, or beyond a u64.
pub fn seconds_of(text: &str) -> Option<u64> {
    let (mut total, mut digits) = (0u64, String::new());
    for c in text.chars() {
        match c {
            '0'..='9' => digits.push(c),
            'h' | 'm' | 's' if !digits.is_empty() => {
                // Too many digits for a u64 is beyond any bound too.
                let n: u64 = digits.parse().ok()?;
                let unit = match c {
                    'h' => 3600,
                    'm' => 60,
                    _ => 1,
                };
                total = n.checked_mul(unit).and_then(|x| total.checked_add(x))?;
                digits.clear();
            }
            _ => return None,
        }
    }
    (digits.is_empty() && !text.is_empty()).then_some(total)
}

/// The CRD's CEL rule for the range of `rotateEvery`: the same result as
/// [`parse_period`] for every string of the format `^([0-9]+(h|m|s))+$`
/// (which a rule of its own checks; this one stays silent otherwise).
///
/// It adds up the components in seconds as integers rather than with
/// `duration()`: that is Go's `time.ParseDuration`, which fails beyond about
/// 292 years, and units may repeat, so even a bounded digit count per
/// component (`999999h999999h999999h`) would reach it. A component with more
/// than 10 significant digits is at least 10^10 s, beyond the maximum, and is
/// refused before `int()` sees it; with at most 10, the sum of the at most 16
/// components (maxLength 32) is far within an int64.
pub fn period_range_rule() -> String {
    format!(
        "!self.matches('^([0-9]+(h|m|s))+$') || \
         (self.findAll('[0-9]+[hms]').all(c, c.matches('^0*[0-9]{{1,10}}[hms]$')) && \
         [self.findAll('[0-9]+[hms]').map(c, int(c.substring(0, size(c) - 1)) * \
         (c.endsWith('h') ? 3600 : (c.endsWith('m') ? 60 : 1))).sum()]\
         .all(t, t >= {MIN_PERIOD_SECONDS} && t <= {MAX_PERIOD_SECONDS}))"
    )
}

/// The epoch at time `now` (seconds) of a RandomSecret created at `created`,
/// one per `period` seconds, and when the next epoch starts. Defined for
/// every input, without overflow: a creation time in the future is epoch 0,
/// and a next start beyond what an `i64` holds is `i64::MAX` (never).
pub fn epoch_at(period: u64, created: i64, now: i64) -> (u64, i64) {
    let period = period.max(1);
    let elapsed = if now > created {
        now.abs_diff(created)
    } else {
        0
    };
    let epoch = elapsed / period;
    let next = epoch
        .checked_add(1)
        .and_then(|n| n.checked_mul(period))
        .and_then(|offset| created.checked_add_unsigned(offset))
        .unwrap_or(i64::MAX);
    (epoch, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_parse_like_go_durations() {
        assert_eq!(parse_period("720h").unwrap(), 720 * 3600);
        assert_eq!(parse_period("1h30m").unwrap(), 5400);
        assert_eq!(parse_period("90m").unwrap(), 5400);
        for bad in ["", "30s", "10", "h", "1d", "1h-", "99999999999999999999h"] {
            assert!(parse_period(bad).is_err(), "{bad}");
        }
    }

    /// What the CRD's rule admits (e2e: `rotate_every_range_is_enforced_at_admission`).
    #[test]
    fn periods_are_bounded_to_1m_and_876000h() {
        let ok: &[(&str, u64)] = &[
            ("1m", 60),
            ("60s", 60),
            ("1h30m", 5400),
            ("876000h", 3_153_600_000),
            ("875999h60m", 3_153_600_000),
            ("3153600000s", 3_153_600_000),
            ("0000000000000000000000001h", 3600),
        ];
        for (text, secs) in ok {
            assert_eq!(parse_period(text), Ok(*secs), "{text}");
        }
        for bad in [
            "59s",
            "0h",
            "876001h",
            "876000h1s",
            "3153600001s",
            "18446744073709551615s",
            "18446744073709551616s",
            "9999999999999999999h",
            "5124095576030431h",
            "999999h999999h999999h",
            "2562048h",
        ] {
            let err = super::super::SpecError::from(parse_period(bad).expect_err(bad));
            assert_eq!(err.reason(), "InvalidRotateEvery");
            assert!(
                err.to_string()
                    .contains("at least 1m and at most 876000h (100 years)"),
                "{err}"
            );
        }
    }

    #[test]
    fn epochs_count_periods_since_creation() {
        assert_eq!(epoch_at(60, 1000, 1000), (0, 1060));
        assert_eq!(epoch_at(60, 1000, 1059), (0, 1060));
        assert_eq!(epoch_at(60, 1000, 1060), (1, 1120));
        // Created after now (clock skew): the first epoch, due one period after creation.
        assert_eq!(epoch_at(60, 1000, 0), (0, 1060));
        assert_eq!(epoch_at(60, i64::MAX, i64::MIN), (0, i64::MAX));
    }

    #[test]
    fn epochs_never_overflow() {
        let max = MAX_PERIOD_SECONDS;
        // The longest period, from a creation now: the next epoch 100 years on.
        let now = 1_750_000_000;
        assert_eq!(epoch_at(max, now, now), (0, now + max as i64));
        // The widest span an i64 holds, and beyond it.
        assert_eq!(
            epoch_at(max, i64::MIN, i64::MAX),
            (u64::MAX / max, i64::MAX)
        );
        assert_eq!(epoch_at(60, i64::MIN, i64::MAX), (u64::MAX / 60, i64::MAX));
        assert_eq!(epoch_at(1, i64::MIN, i64::MAX), (u64::MAX, i64::MAX));
        assert_eq!(epoch_at(0, 0, 10), (10, 11));
        assert_eq!(epoch_at(u64::MAX, i64::MIN, i64::MAX), (1, i64::MAX));
        // Near the end of time: exact while the next start fits, then i64::MAX.
        let created = i64::MAX - 100;
        assert_eq!(epoch_at(60, created, i64::MAX - 50), (0, i64::MAX - 40));
        assert_eq!(epoch_at(60, created, i64::MAX), (1, i64::MAX));
    }
}
