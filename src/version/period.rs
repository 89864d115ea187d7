//! `rotateEvery`: parsing the period, and counting periods (epochs) since
//! the RandomSecret's creation.

use super::spec::SpecError;

/// Parses a duration such as `720h`, `90m` or `1h30m` into seconds (at least 60).
pub fn parse_period(text: &str) -> Result<u64, SpecError> {
    let bad = || SpecError::InvalidRotateEvery(text.to_string());
    let (mut total, mut digits) = (0u64, String::new());
    for c in text.chars() {
        match c {
            '0'..='9' => digits.push(c),
            'h' | 'm' | 's' if !digits.is_empty() => {
                let n: u64 = digits.parse().map_err(|_| bad())?;
                let unit = match c {
                    'h' => 3600,
                    'm' => 60,
                    _ => 1,
                };
                total = n
                    .checked_mul(unit)
                    .and_then(|x| total.checked_add(x))
                    .ok_or_else(bad)?;
                digits.clear();
            }
            _ => return Err(bad()),
        }
    }
    if !digits.is_empty() || total < 60 {
        return Err(bad());
    }
    Ok(total)
}

/// The epoch at time `now` (seconds) of a RandomSecret created at `created`,
/// with one epoch per `period` seconds, and when the next epoch starts.
pub fn epoch_at(period: u64, created: i64, now: i64) -> (u64, i64) {
    let period = period as i64;
    let epoch = (now - created).max(0) / period;
    let next = created + (epoch + 1) * period;
    (epoch as u64, next)
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
}
