//! Time: the injected [`Clock`] and the millisecond-precision [`Timestamp`] every record carries.
//!
//! Every window, expiry and retention rule reads the clock instead of the system time, so tests
//! move time with a [`ManualClock`] instead of sleeping.

use std::fmt;
use std::sync::{Arc, Mutex};

use chrono::{
    DateTime, Datelike, Duration, NaiveDate, NaiveTime, SecondsFormat, TimeZone, Timelike, Utc,
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A UTC instant with millisecond precision, rendered as `2026-11-22T10:15:30.123Z`.
///
/// Truncating on construction (rather than when rendering) means a value read back from any
/// backend compares equal to the value that was written.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(DateTime<Utc>);

impl Timestamp {
    /// The earliest representable instant.
    pub const MIN: Timestamp = Timestamp(DateTime::<Utc>::MIN_UTC);
    /// The latest representable instant.
    pub const MAX: Timestamp = Timestamp(DateTime::<Utc>::MAX_UTC);

    /// Wraps `at`, dropping anything finer than a millisecond.
    pub fn from_datetime(at: DateTime<Utc>) -> Self {
        // Only the sub-second part changes: no calendar arithmetic. A leap second's
        // nanoseconds (1e9 and up) floor to a millisecond of it, which chrono accepts. The
        // fields are read from the UTC value itself (a `DateTime`'s own accessors add the
        // offset first, zero as it is).
        let naive = at.naive_utc();
        let nanos = naive.nanosecond();
        naive
            .with_nanosecond(nanos - nanos % 1_000_000)
            .map_or(Self(at), |floored| Self(floored.and_utc()))
    }

    /// Milliseconds since the Unix epoch; `None` when out of chrono's range.
    pub fn from_unix_millis(millis: i64) -> Option<Self> {
        Utc.timestamp_millis_opt(millis).single().map(Self)
    }

    /// Parses an RFC 3339 string (any offset), truncating to milliseconds.
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        DateTime::parse_from_rfc3339(text)
            .ok()
            .map(|at| Self::from_datetime(at.with_timezone(&Utc)))
    }

    /// The wrapped chrono value.
    pub fn as_datetime(&self) -> DateTime<Utc> {
        self.0
    }

    /// Milliseconds since the Unix epoch.
    pub fn unix_millis(&self) -> i64 {
        self.0.timestamp_millis()
    }

    /// This instant moved by `delta` (saturating at chrono's range).
    pub fn plus(&self, delta: Duration) -> Self {
        match self.0.checked_add_signed(delta) {
            Some(at) => Self(at),
            None if delta < Duration::zero() => Self::MIN,
            None => Self::MAX,
        }
    }

    /// The start of the UTC hour containing this instant.
    pub fn start_of_hour(&self) -> Self {
        // The time of day is replaced, the date kept: no calendar arithmetic (the rate
        // limits' windows start here on every request).
        let at = self.0.naive_utc();
        let hour = NaiveTime::from_hms_opt(at.hour(), 0, 0).unwrap_or(NaiveTime::MIN);
        Self(at.date().and_time(hour).and_utc())
    }

    /// The start of the UTC day containing this instant.
    pub fn start_of_day(&self) -> Self {
        Self(self.0.naive_utc().date().and_time(NaiveTime::MIN).and_utc())
    }

    /// The first day of the UTC month containing this instant.
    pub fn month_start_date(&self) -> NaiveDate {
        self.start_of_month().0.date_naive()
    }

    /// The last day of the UTC month containing this instant.
    pub fn month_end_date(&self) -> NaiveDate {
        // The last millisecond before the next month: also right in chrono's last month,
        // where `next_month_start` saturates to `MAX`, the month's last instant.
        self.next_month_start()
            .plus(Duration::milliseconds(-1))
            .0
            .date_naive()
    }

    /// The start of the UTC month containing this instant.
    pub fn start_of_month(&self) -> Self {
        Self::from_ymd_hms(self.0.year(), self.0.month(), 1, 0)
    }

    /// The start of the UTC month after this instant's ([`Timestamp::MAX`] in chrono's last
    /// month).
    pub fn next_month_start(&self) -> Self {
        let (year, month) = match self.0.month() {
            12 => (self.0.year() + 1, 1),
            m => (self.0.year(), m + 1),
        };
        Self::from_ymd_hms(year, month, 1, 0)
    }

    /// The month as `YYYY-MM`, the key of monthly usage counters.
    pub fn month_key(&self) -> String {
        self.0.format("%Y-%m").to_string()
    }

    /// Whole seconds from `self` until `later`, rounded up, at least 1 when `later` is ahead.
    pub fn seconds_until(&self, later: Timestamp) -> u64 {
        let millis = later.unix_millis() - self.unix_millis();
        if millis <= 0 {
            0
        } else {
            (millis as u64).div_ceil(1000)
        }
    }

    /// The instant at the start of that hour. Callers derive the fields from a valid instant,
    /// so only the month after chrono's last one is out of range: it saturates like [`plus`].
    ///
    /// [`plus`]: Timestamp::plus
    fn from_ymd_hms(year: i32, month: u32, day: u32, hour: u32) -> Self {
        Utc.with_ymd_and_hms(year, month, day, hour, 0, 0)
            .single()
            .map_or(Self::MAX, Self)
    }
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(at: DateTime<Utc>) -> Self {
        Self::from_datetime(at)
    }
}

/// `2026-11-24T05:47:21.123Z`: the RFC 3339 text of an instant of the years 0 to 9999.
struct Rfc3339([u8; 24]);

impl Rfc3339 {
    /// `None` outside the years RFC 3339 can write, and in a leap second (`:60`).
    fn of(at: &DateTime<Utc>) -> Option<Self> {
        // The UTC value's own fields: a `DateTime`'s accessors each add the (zero) offset.
        let at = at.naive_utc();
        let year = u32::try_from(at.year()).ok().filter(|year| *year <= 9999)?;
        let millis = Some(at.nanosecond() / 1_000_000).filter(|millis| *millis < 1000)?;
        let mut text = *b"0000-00-00T00:00:00.000Z";
        // Digit by digit into a fixed buffer: every record of every response has timestamps,
        // and `write!` with padded fields cost more than the rest of their serialization.
        for (start, width, value) in [
            (0, 4, year),
            (5, 2, at.month()),
            (8, 2, at.day()),
            (11, 2, at.hour()),
            (14, 2, at.minute()),
            (17, 2, at.second()),
            (20, 3, millis),
        ] {
            let mut rest = value;
            for digit in text[start..start + width].iter_mut().rev() {
                *digit = b'0' + (rest % 10) as u8;
                rest /= 10;
            }
        }
        Some(Self(text))
    }

    fn as_str(&self) -> &str {
        // Digits and the separators put in above: ASCII.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Rfc3339::of(&self.0) {
            Some(text) => f.write_str(text.as_str()),
            // Only chrono's extremes; RFC 3339 has no form for them, chrono's is kept.
            None => f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Millis, true)),
        }
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match Rfc3339::of(&self.0) {
            Some(text) => serializer.serialize_str(text.as_str()),
            None => serializer.collect_str(self),
        }
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Timestamp::parse_rfc3339(&text).ok_or_else(|| {
            serde::de::Error::custom("expected an RFC 3339 date-time such as 2026-11-22T10:15:30Z")
        })
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for Timestamp {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                utoipa::openapi::KnownFormat::DateTime,
            )))
            .examples(["2026-11-22T10:15:30.123Z"])
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for Timestamp {}

/// The source of "now" for every rule that depends on time.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_datetime(Utc::now())
    }
}

/// A clock that only moves when told to: for tests of windows, expiry and retention.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<Mutex<Timestamp>>);

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: Timestamp) -> Self {
        Self(Arc::new(Mutex::new(start)))
    }

    /// Moves the clock to `at`.
    pub fn set(&self, at: Timestamp) {
        *self.0.lock().unwrap_or_else(|poison| poison.into_inner()) = at;
    }

    /// Moves the clock forward by `delta`.
    pub fn advance(&self, delta: Duration) {
        let mut now = self.0.lock().unwrap_or_else(|poison| poison.into_inner());
        *now = now.plus(delta);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap_or_else(|poison| poison.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_milliseconds_in_utc() {
        let at = Timestamp::parse_rfc3339("2026-11-22T11:15:30.123456+01:00").unwrap();
        assert_eq!(at.to_string(), "2026-11-22T10:15:30.123Z");
        // As chrono's RFC 3339 with milliseconds, over the years xf meets and at the extremes.
        for millis in [0, 5, 999, 1_000, 1_795_499_241_007, 253_402_300_799_999, -1] {
            let at = Timestamp::from_unix_millis(millis).unwrap();
            let chrono = at
                .as_datetime()
                .to_rfc3339_opts(SecondsFormat::Millis, true);
            assert_eq!(at.to_string(), chrono, "{millis}");
        }
        let leap_second = NaiveDate::from_ymd_opt(2016, 12, 31)
            .and_then(|day| day.and_hms_milli_opt(23, 59, 59, 1_250))
            .unwrap()
            .and_utc();
        for at in [
            Timestamp::MIN,
            Timestamp::MAX,
            Timestamp::from_datetime(leap_second),
        ] {
            let chrono = at
                .as_datetime()
                .to_rfc3339_opts(SecondsFormat::Millis, true);
            assert_eq!(at.to_string(), chrono);
        }
        assert_eq!(
            Timestamp::from_datetime(leap_second).to_string(),
            "2016-12-31T23:59:60.250Z"
        );
        // Serialized as the same text.
        let at = Timestamp::from_unix_millis(1_795_499_241_007).unwrap();
        assert_eq!(
            serde_json::to_string(&at).unwrap(),
            "\"2026-11-24T05:47:21.007Z\""
        );
        assert_eq!(
            serde_json::to_string(&Timestamp::MIN).unwrap(),
            format!("\"{}\"", Timestamp::MIN)
        );
    }

    #[test]
    fn windows_align_to_utc_hour_day_and_month() {
        let at = Timestamp::parse_rfc3339("2026-12-31T23:59:59.999Z").unwrap();
        assert_eq!(at.start_of_hour().to_string(), "2026-12-31T23:00:00.000Z");
        assert_eq!(at.start_of_day().to_string(), "2026-12-31T00:00:00.000Z");
        assert_eq!(
            at.next_month_start().to_string(),
            "2027-01-01T00:00:00.000Z"
        );
        assert_eq!(at.month_end_date().to_string(), "2026-12-31");
        assert_eq!(at.month_key(), "2026-12");
        assert_eq!(at.seconds_until(at.next_month_start()), 1);
        assert_eq!(at.month_start_date().to_string(), "2026-12-01");
    }

    proptest::proptest! {
        /// The windows' starts, taken from the date and hour, are the instant's Unix time
        /// rounded down to the hour and the day (Unix time has no leap seconds).
        #[test]
        fn windows_start_at_the_unix_time_rounded_down(
            millis in -8_000_000_000_000_000i64..8_000_000_000_000_000i64,
        ) {
            let at = Timestamp::from_unix_millis(millis).unwrap();
            for (start, unit) in [(at.start_of_hour(), 3_600_000), (at.start_of_day(), 86_400_000)] {
                proptest::prop_assert_eq!(start.unix_millis(), millis - millis.rem_euclid(unit));
            }
            let rendered = at.as_datetime().to_rfc3339_opts(SecondsFormat::Millis, true);
            if (0..=253_402_300_799_999).contains(&millis) {
                proptest::prop_assert_eq!(at.to_string(), rendered);
            }
        }
    }

    #[test]
    fn arithmetic_saturates_at_the_ends_of_the_range() {
        assert_eq!(Timestamp::MAX.plus(Duration::days(1)), Timestamp::MAX);
        assert_eq!(Timestamp::MIN.plus(Duration::days(-1)), Timestamp::MIN);
        assert_eq!(Timestamp::MAX.next_month_start(), Timestamp::MAX);
        assert_eq!(
            Timestamp::MAX.month_end_date(),
            Timestamp::MAX.as_datetime().date_naive()
        );
    }
}
