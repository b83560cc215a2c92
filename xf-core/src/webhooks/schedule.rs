//! When a failed delivery is tried again (docs/webhooks.md): after 5 s, 5 min, 30 min, 2 h, 5 h,
//! 10 h and 10 h, each with ±20% jitter, so eight attempts in all over about a day and a
//! half. A receiver's `Retry-After` is honoured: the next attempt comes no sooner than it
//! asks, up to [`MAX_RETRY_AFTER`].

use std::time::Duration;

use rand::Rng;

/// The waits after the first, second, … failed attempt.
pub const RETRY_DELAYS: [Duration; 7] = [
    Duration::from_secs(5),
    Duration::from_secs(5 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(2 * 3600),
    Duration::from_secs(5 * 3600),
    Duration::from_secs(10 * 3600),
    Duration::from_secs(10 * 3600),
];

/// Attempts in all: the first and one per retry delay.
pub const MAX_ATTEMPTS: u32 = RETRY_DELAYS.len() as u32 + 1;

/// The jitter: a wait is scaled by a factor drawn from `1 ± JITTER`.
pub const JITTER: f64 = 0.2;

/// The longest `Retry-After` honoured; a longer one waits this long.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(10 * 3600);

/// The wait after failed attempt `attempt` (1 for the first), with `jitter` in `-1.0..=1.0`
/// scaling it by up to ±[`JITTER`], and at least `retry_after` (clamped to
/// [`MAX_RETRY_AFTER`]); `None` when no attempt is left.
pub fn retry_delay(attempt: u32, jitter: f64, retry_after: Option<Duration>) -> Option<Duration> {
    let index = usize::try_from(attempt.checked_sub(1)?).ok()?;
    let base = RETRY_DELAYS.get(index)?;
    let scaled = base.mul_f64(1.0 + JITTER * jitter.clamp(-1.0, 1.0));
    let asked = retry_after.unwrap_or_default().min(MAX_RETRY_AFTER);
    Some(scaled.max(asked))
}

/// [`retry_delay`] with a random jitter.
pub fn next_retry(attempt: u32, retry_after: Option<Duration>) -> Option<Duration> {
    let jitter = rand::thread_rng().gen_range(-1.0..=1.0);
    retry_delay(attempt, jitter, retry_after)
}

/// The wait a `Retry-After` value asks for: whole seconds, or an HTTP date (a date in the
/// past asks for none). `None` for anything else.
pub fn parse_retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    Some(
        (at.with_timezone(&chrono::Utc) - now)
            .to_std()
            .unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_is_the_contracts_with_bounded_jitter() {
        let minutes = |m: u64| Duration::from_secs(m * 60);
        let expected = [
            Duration::from_secs(5),
            minutes(5),
            minutes(30),
            minutes(120),
            minutes(300),
            minutes(600),
            minutes(600),
        ];
        for (i, base) in expected.iter().enumerate() {
            let attempt = i as u32 + 1;
            assert_eq!(retry_delay(attempt, 0.0, None), Some(*base));
            assert_eq!(retry_delay(attempt, -1.0, None), Some(base.mul_f64(0.8)));
            assert_eq!(retry_delay(attempt, 1.0, None), Some(base.mul_f64(1.2)));
            for _ in 0..50 {
                let drawn = next_retry(attempt, None).unwrap();
                assert!(drawn >= base.mul_f64(0.8) && drawn <= base.mul_f64(1.2));
            }
        }
        assert_eq!(MAX_ATTEMPTS, 8);
        assert_eq!(retry_delay(8, 0.0, None), None);
        assert_eq!(retry_delay(0, 0.0, None), None);
    }

    #[test]
    fn retry_after_is_honoured_and_clamped() {
        let after = |s: u64| Some(Duration::from_secs(s));
        assert_eq!(retry_delay(1, 0.0, after(120)), after(120));
        assert_eq!(retry_delay(3, 0.0, after(120)), after(1800), "never sooner");
        assert_eq!(
            retry_delay(1, 0.0, after(7 * 24 * 3600)),
            Some(MAX_RETRY_AFTER)
        );
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-22T10:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(parse_retry_after(" 30 ", now), after(30));
        assert_eq!(
            parse_retry_after("Sun, 22 Nov 2026 10:01:00 GMT", now),
            after(60)
        );
        assert_eq!(
            parse_retry_after("Sun, 22 Nov 2026 09:00:00 GMT", now),
            after(0)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-5", now), None);
    }
}
