//! Scheduled scans (beyond the spec): a property's recurring scan, when it runs next, and what
//! each of its slots did.
//!
//! A schedule names a local time in an IANA time zone; its slots are the instants at which that
//! local time occurs on the schedule's days. Across daylight-saving changes a slot keeps its
//! local time: a time that does not exist that day (in the hour the clocks skip) runs as many
//! minutes later as they skipped, and a time that occurs twice (the hour repeated) runs at its
//! first occurrence.

use chrono::{
    Datelike, Duration, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone,
};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

use crate::ids::{JobId, OrganizationId, PropertyId};
use crate::time::Timestamp;

/// How often a schedule runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Frequency {
    /// Every day.
    Daily,
    /// Every week, on `dayOfWeek`.
    Weekly,
    /// Every month, on `dayOfMonth` (the month's last day when it is shorter).
    Monthly,
}

impl Frequency {
    /// The wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Frequency::Daily => "daily",
            Frequency::Weekly => "weekly",
            Frequency::Monthly => "monthly",
        }
    }

    /// Parses a wire name.
    pub fn parse(text: &str) -> Option<Self> {
        [Frequency::Daily, Frequency::Weekly, Frequency::Monthly]
            .into_iter()
            .find(|f| f.as_str() == text)
    }
}

/// A day of the week.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Weekday {
    /// Monday.
    Monday,
    /// Tuesday.
    Tuesday,
    /// Wednesday.
    Wednesday,
    /// Thursday.
    Thursday,
    /// Friday.
    Friday,
    /// Saturday.
    Saturday,
    /// Sunday.
    Sunday,
}

impl Weekday {
    const ALL: [Weekday; 7] = [
        Weekday::Monday,
        Weekday::Tuesday,
        Weekday::Wednesday,
        Weekday::Thursday,
        Weekday::Friday,
        Weekday::Saturday,
        Weekday::Sunday,
    ];

    /// The wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Weekday::Monday => "monday",
            Weekday::Tuesday => "tuesday",
            Weekday::Wednesday => "wednesday",
            Weekday::Thursday => "thursday",
            Weekday::Friday => "friday",
            Weekday::Saturday => "saturday",
            Weekday::Sunday => "sunday",
        }
    }

    /// Parses a wire name.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.as_str() == text)
    }

    fn chrono(self) -> chrono::Weekday {
        match self {
            Weekday::Monday => chrono::Weekday::Mon,
            Weekday::Tuesday => chrono::Weekday::Tue,
            Weekday::Wednesday => chrono::Weekday::Wed,
            Weekday::Thursday => chrono::Weekday::Thu,
            Weekday::Friday => chrono::Weekday::Fri,
            Weekday::Saturday => chrono::Weekday::Sat,
            Weekday::Sunday => chrono::Weekday::Sun,
        }
    }
}

/// When a schedule's slots fall: checked, so that every slot exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cadence {
    /// How often.
    pub frequency: Frequency,
    /// The local time, in minutes after midnight (0 to 1439).
    pub minute_of_day: u16,
    /// The IANA time zone.
    pub timezone: Tz,
    /// The day of weekly schedules.
    pub day_of_week: Option<Weekday>,
    /// The day of monthly schedules, 1 to 31.
    pub day_of_month: Option<u8>,
}

/// Why a cadence cannot be built, naming the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CadenceError {
    /// The field at fault.
    pub field: &'static str,
    /// What it must be.
    pub message: String,
}

impl Cadence {
    /// A cadence from its wire parts: `time` as `HH:MM` (24-hour), `timezone` an IANA name;
    /// weekly schedules need `day_of_week` and monthly ones `day_of_month` (1 to 31), and
    /// neither takes the other's day.
    pub fn new(
        frequency: Frequency,
        time: &str,
        timezone: &str,
        day_of_week: Option<Weekday>,
        day_of_month: Option<u8>,
    ) -> Result<Self, CadenceError> {
        let error = |field: &'static str, message: &str| CadenceError {
            field,
            message: message.to_owned(),
        };
        let minute_of_day = parse_time(time)
            .ok_or_else(|| error("time", "must be a 24-hour local time HH:MM, 00:00 to 23:59"))?;
        let timezone: Tz = timezone.parse().map_err(|_| {
            error(
                "timezone",
                "must be an IANA time zone name such as Europe/Berlin",
            )
        })?;
        match (frequency, day_of_week, day_of_month) {
            (Frequency::Weekly, None, _) => {
                return Err(error("dayOfWeek", "is required for weekly schedules"))
            }
            (Frequency::Monthly, _, None) => {
                return Err(error("dayOfMonth", "is required for monthly schedules"))
            }
            (Frequency::Daily | Frequency::Monthly, Some(_), _) => {
                return Err(error("dayOfWeek", "is only for weekly schedules"))
            }
            (Frequency::Daily | Frequency::Weekly, _, Some(_)) => {
                return Err(error("dayOfMonth", "is only for monthly schedules"))
            }
            (_, _, Some(day)) if !(1..=31).contains(&day) => {
                return Err(error("dayOfMonth", "must be 1 to 31"))
            }
            _ => {}
        }
        Ok(Cadence {
            frequency,
            minute_of_day,
            timezone,
            day_of_week,
            day_of_month,
        })
    }

    /// The local time as `HH:MM`.
    pub fn time(&self) -> String {
        format!(
            "{:02}:{:02}",
            self.minute_of_day / 60,
            self.minute_of_day % 60
        )
    }

    /// The first slot strictly after `after`.
    pub fn next_slot(&self, after: Timestamp) -> Timestamp {
        let local = self
            .timezone
            .from_utc_datetime(&after.as_datetime().naive_utc());
        // A slot on the day before `after`'s local date can still lie after it when the
        // zone's offset changes; starting a day early costs nothing.
        let mut date = local.date_naive() - Duration::days(1);
        // Monthly schedules have a slot at least every 31 days, weekly every 7.
        for _ in 0..400 {
            if let Some(slot) = self.slot_on(date).filter(|slot| *slot > after) {
                return slot;
            }
            date = match date.succ_opt() {
                Some(next) => next,
                None => break,
            };
        }
        Timestamp::MAX
    }

    /// The slot on local `date`, if the schedule runs that day.
    fn slot_on(&self, date: NaiveDate) -> Option<Timestamp> {
        let runs = match self.frequency {
            Frequency::Daily => true,
            Frequency::Weekly => self.day_of_week.map(Weekday::chrono) == Some(date.weekday()),
            Frequency::Monthly => {
                let wanted = u32::from(self.day_of_month.unwrap_or(1));
                date.day() == wanted.min(days_in_month(date))
            }
        };
        if !runs {
            return None;
        }
        let time = NaiveTime::from_hms_opt(
            u32::from(self.minute_of_day / 60),
            u32::from(self.minute_of_day % 60),
            0,
        )?;
        Some(resolve(self.timezone, date.and_time(time)))
    }
}

/// The instant of local time `local` in `zone`: the first of two when the clocks went back;
/// when they went forward past it, as many minutes later as they skipped (02:30 on a night the
/// clocks jump from 02:00 to 03:00 is 03:30), which is `local` read with the offset before the
/// change.
fn resolve(zone: Tz, local: NaiveDateTime) -> Timestamp {
    match zone.from_local_datetime(&local) {
        LocalResult::Single(at) | LocalResult::Ambiguous(at, _) => {
            Timestamp::from_datetime(at.with_timezone(&chrono::Utc))
        }
        LocalResult::None => {
            let before = zone
                .offset_from_utc_datetime(&(local - Duration::days(1)))
                .fix();
            let utc = local - Duration::seconds(i64::from(before.local_minus_utc()));
            Timestamp::from_datetime(utc.and_utc())
        }
    }
}

fn days_in_month(date: NaiveDate) -> u32 {
    let (year, month) = (date.year(), date.month());
    let first_next = if month == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(year, month + 1, 1)
    };
    first_next
        .and_then(|next| next.pred_opt())
        .map_or(31, |last| last.day())
}

/// `HH:MM` on a 24-hour clock, in minutes after midnight.
fn parse_time(text: &str) -> Option<u16> {
    let (hours, minutes) = text.split_once(':')?;
    if hours.len() != 2 || minutes.len() != 2 {
        return None;
    }
    if !hours
        .bytes()
        .chain(minutes.bytes())
        .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let (hours, minutes): (u16, u16) = (hours.parse().ok()?, minutes.parse().ok()?);
    (hours < 24 && minutes < 60).then_some(hours * 60 + minutes)
}

/// Every time zone name a schedule accepts: the IANA database's, as compiled in.
pub fn timezone_names() -> impl Iterator<Item = &'static str> {
    chrono_tz::TZ_VARIANTS.iter().map(|zone| zone.name())
}

/// A property's scan schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanSchedule {
    /// The property.
    pub property_id: PropertyId,
    /// Its organization.
    pub organization_id: OrganizationId,
    /// When it runs.
    pub cadence: Cadence,
    /// The scans' page budget (clamped to the plan's when queued); the plan's when `None`.
    pub max_pages: Option<u32>,
    /// The scans' depth budget; the plan's when `None`.
    pub max_depth: Option<u32>,
    /// The next slot to claim.
    pub next_run_at: Timestamp,
    /// When it was first set.
    pub created_at: Timestamp,
    /// When it was last set.
    pub updated_at: Timestamp,
}

/// What a schedule's slot did.
///
/// Not `#[non_exhaustive]`: every store (or edge) that is given one matches on it, and a
/// variant added must stop one that does not handle it from compiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum SlotOutcome {
    /// A scan was queued (`jobId`).
    Queued,
    /// A scan of the property was still pending or running: none was queued.
    SkippedBusy,
    /// The organization's `scansPerMonth` was spent: none was queued, and
    /// `scan.schedule.failed` was sent.
    QuotaExceeded,
}

impl SlotOutcome {
    /// The wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            SlotOutcome::Queued => "queued",
            SlotOutcome::SkippedBusy => "skipped_busy",
            SlotOutcome::QuotaExceeded => "quota_exceeded",
        }
    }

    /// Parses a wire name.
    pub fn parse(text: &str) -> Option<Self> {
        [
            SlotOutcome::Queued,
            SlotOutcome::SkippedBusy,
            SlotOutcome::QuotaExceeded,
        ]
        .into_iter()
        .find(|o| o.as_str() == text)
    }
}

/// One claimed slot of a schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ScheduleRun {
    /// The property.
    #[serde(skip)]
    pub property_id: PropertyId,
    /// The slot's instant.
    pub slot: Timestamp,
    /// What it did.
    pub outcome: SlotOutcome,
    /// The scan it queued.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub job_id: Option<JobId>,
    /// When it was claimed.
    pub claimed_at: Timestamp,
}

/// `data` of `scan.schedule.failed`: a slot of a property's schedule queued no scan because
/// the organization's `scansPerMonth` was spent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ScheduleEventData {
    /// The slot that failed.
    pub schedule: ScheduleFailure,
}

/// A slot that queued no scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ScheduleFailure {
    /// The property.
    pub property_id: PropertyId,
    /// Its name.
    pub property_name: String,
    /// The slot's instant.
    pub slot: Timestamp,
    /// `quota_exceeded`.
    pub code: String,
    /// For people.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse_rfc3339(text).expect("a time")
    }

    fn berlin(frequency: Frequency, time: &str, dow: Option<Weekday>, dom: Option<u8>) -> Cadence {
        Cadence::new(frequency, time, "Europe/Berlin", dow, dom).expect("a cadence")
    }

    #[test]
    fn slots_keep_their_local_time_across_daylight_saving_changes() {
        // Berlin: CET (+01:00) until 2027-03-28 02:00, then CEST (+02:00) until 2027-10-31.
        let daily = berlin(Frequency::Daily, "09:30", None, None);
        assert_eq!(
            daily.next_slot(at("2027-03-27T08:30:00Z")),
            at("2027-03-28T07:30:00Z")
        );
        assert_eq!(
            daily.next_slot(at("2027-10-30T07:30:00Z")),
            at("2027-10-31T08:30:00Z")
        );
        // 02:30 does not exist on 2027-03-28: the clocks skip an hour, so does the slot, to
        // 03:30 CEST.
        let gap = berlin(Frequency::Daily, "02:30", None, None);
        assert_eq!(
            gap.next_slot(at("2027-03-27T12:00:00Z")),
            at("2027-03-28T01:30:00Z")
        );
        assert_eq!(
            gap.next_slot(at("2027-03-28T01:30:00Z")),
            at("2027-03-29T00:30:00Z")
        );
        // 02:30 happens twice on 2027-10-31: the first one (CEST), once.
        assert_eq!(
            gap.next_slot(at("2027-10-30T12:00:00Z")),
            at("2027-10-31T00:30:00Z")
        );
        assert_eq!(
            gap.next_slot(at("2027-10-31T00:30:00Z")),
            at("2027-11-01T01:30:00Z")
        );
    }

    #[test]
    fn weekly_and_monthly_slots_fall_on_their_day() {
        // 2027-01-01 is a Friday.
        let weekly = berlin(Frequency::Weekly, "06:00", Some(Weekday::Monday), None);
        assert_eq!(
            weekly.next_slot(at("2027-01-01T00:00:00Z")),
            at("2027-01-04T05:00:00Z")
        );
        assert_eq!(
            weekly.next_slot(at("2027-01-04T05:00:00Z")),
            at("2027-01-11T05:00:00Z")
        );
        let monthly = berlin(Frequency::Monthly, "00:00", None, Some(31));
        // February has 28 days in 2027: its last day.
        assert_eq!(
            monthly.next_slot(at("2027-02-01T00:00:00Z")),
            at("2027-02-27T23:00:00Z")
        );
        assert_eq!(
            monthly.next_slot(at("2027-02-27T23:00:00Z")),
            at("2027-03-30T22:00:00Z")
        );
        let utc = Cadence::new(Frequency::Daily, "23:59", "UTC", None, None).unwrap();
        assert_eq!(
            utc.next_slot(at("2027-12-31T23:59:00Z")),
            at("2028-01-01T23:59:00Z")
        );
    }

    #[test]
    fn a_cadence_names_the_field_it_refuses() {
        let field = |result: Result<Cadence, CadenceError>| result.unwrap_err().field;
        let new = Cadence::new;
        for bad in [
            "24:00", "9:30", "09:60", "09-30", "", "0930", "+9:30", "09:3a",
        ] {
            assert_eq!(
                field(new(Frequency::Daily, bad, "UTC", None, None)),
                "time",
                "{bad}"
            );
        }
        assert_eq!(
            field(new(Frequency::Daily, "09:30", "Mars/Olympus", None, None)),
            "timezone"
        );
        assert_eq!(
            field(new(Frequency::Weekly, "09:30", "UTC", None, None)),
            "dayOfWeek"
        );
        assert_eq!(
            field(new(Frequency::Monthly, "09:30", "UTC", None, None)),
            "dayOfMonth"
        );
        assert_eq!(
            field(new(Frequency::Monthly, "09:30", "UTC", None, Some(0))),
            "dayOfMonth"
        );
        assert_eq!(
            field(new(Frequency::Monthly, "09:30", "UTC", None, Some(32))),
            "dayOfMonth"
        );
        assert_eq!(
            field(new(
                Frequency::Daily,
                "09:30",
                "UTC",
                Some(Weekday::Monday),
                None
            )),
            "dayOfWeek"
        );
        assert_eq!(
            field(new(
                Frequency::Weekly,
                "09:30",
                "UTC",
                Some(Weekday::Monday),
                Some(3)
            )),
            "dayOfMonth"
        );
    }

    proptest! {
        /// In any zone and at any time, the next slot lies after the instant asked about, at
        /// most a month and a day later, and shows the schedule's local time (or the end of
        /// a gap just after it); asking again from it gives a later slot.
        #[test]
        fn next_slots_move_forward(
            zone in proptest::sample::select(vec!["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "UTC", "Pacific/Apia"]),
            minute in 0u16..1440,
            frequency in proptest::sample::select(vec![Frequency::Daily, Frequency::Weekly, Frequency::Monthly]),
            day in 1u8..=31,
            start in 1_767_225_600_000i64..1_893_456_000_000,
        ) {
            let time = format!("{:02}:{:02}", minute / 60, minute % 60);
            let (dow, dom) = match frequency {
                Frequency::Daily => (None, None),
                Frequency::Weekly => (Some(Weekday::ALL[usize::from(day) % 7]), None),
                Frequency::Monthly => (None, Some(day)),
            };
            let cadence = Cadence::new(frequency, &time, zone, dow, dom).unwrap();
            let after = Timestamp::from_unix_millis(start).unwrap();
            let slot = cadence.next_slot(after);
            prop_assert!(slot > after);
            prop_assert!(slot <= after.plus(Duration::days(32)));
            let local = cadence.timezone.from_utc_datetime(&slot.as_datetime().naive_utc());
            let shown = local.hour_minute();
            prop_assert!(shown == minute || (shown > minute && shown <= minute + 120) || minute + 120 >= 1440);
            prop_assert!(cadence.next_slot(slot) > slot);
        }
    }

    trait HourMinute {
        fn hour_minute(&self) -> u16;
    }

    impl<T: chrono::Timelike> HourMinute for T {
        fn hour_minute(&self) -> u16 {
            (self.hour() * 60 + self.minute()) as u16
        }
    }
}
