//! Behaviours of scan schedules and their slot claims.

use std::sync::Arc;

use super::{at, job, seed_organization, seed_property, TestStore};
use crate::media::events::NewEvent;
use crate::model::schedule::{Cadence, Frequency, ScanSchedule, SlotOutcome, Weekday};
use crate::model::{EventSubject, EventType, JobStatus, Organization, Property};
use crate::store::SlotClaim;
use crate::time::Timestamp;

/// A weekly schedule of `property` (Mondays 06:00 UTC) whose next slot is `next`.
fn schedule(property: &Property, next: Timestamp, now: Timestamp) -> ScanSchedule {
    ScanSchedule {
        property_id: property.id.clone(),
        organization_id: property.organization_id.clone(),
        cadence: Cadence::new(
            Frequency::Weekly,
            "06:00",
            "UTC",
            Some(Weekday::Monday),
            None,
        )
        .expect("a cadence"),
        max_pages: Some(50),
        max_depth: None,
        next_run_at: next,
        created_at: now,
        updated_at: now,
    }
}

/// The claim of `slot` of `property`'s schedule, queueing a scan of it created at `now`.
fn claim(
    organization: &Organization,
    property: &Property,
    slot: Timestamp,
    next: Timestamp,
    now: Timestamp,
    scans_limit: u64,
) -> SlotClaim {
    SlotClaim {
        property_id: property.id.clone(),
        slot,
        next_run_at: next,
        now,
        job: job(organization, property, now),
        month: now.month_key(),
        scans_limit,
        quota_event: NewEvent {
            organization_id: organization.id.clone(),
            event_type: EventType::ScanScheduleFailed,
            data: serde_json::json!({"schedule": {"propertyId": property.id, "slot": slot}}),
        },
    }
}

/// A schedule reads back as set; setting it again replaces it but keeps its `created_at`;
/// it is due from its next slot on; deleting it says whether there was one.
pub async fn schedule_put_get_replace_delete(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Schedules").await;
    let site = seed_property(&*store, &org, at("2026-11-01T00:00:00.000Z")).await;
    let first = schedule(
        &site,
        at("2026-11-02T06:00:00.000Z"),
        at("2026-11-01T10:00:00.000Z"),
    );
    assert_eq!(store.put_schedule(&first).await.unwrap(), first);
    assert_eq!(
        store.get_schedule(&site.id).await.unwrap(),
        Some(first.clone())
    );

    let mut replaced = schedule(
        &site,
        at("2026-11-03T07:15:00.000Z"),
        at("2026-11-01T11:00:00.000Z"),
    );
    replaced.cadence =
        Cadence::new(Frequency::Daily, "08:15", "Europe/Berlin", None, None).unwrap();
    replaced.max_pages = None;
    let stored = store.put_schedule(&replaced).await.unwrap();
    assert_eq!(
        stored,
        ScanSchedule {
            created_at: first.created_at,
            ..replaced.clone()
        }
    );
    assert_eq!(
        store.get_schedule(&site.id).await.unwrap(),
        Some(stored.clone())
    );

    let due = |now: &'static str| {
        let store = Arc::clone(&store);
        let property = site.id.clone();
        async move {
            store
                .due_schedules(at(now), 100_000)
                .await
                .unwrap()
                .into_iter()
                .any(|s| s.property_id == property)
        }
    };
    assert!(!due("2026-11-03T07:14:59.999Z").await);
    assert!(due("2026-11-03T07:15:00.000Z").await);

    assert!(store.delete_schedule(&site.id).await.unwrap());
    assert!(!store.delete_schedule(&site.id).await.unwrap());
    assert_eq!(store.get_schedule(&site.id).await.unwrap(), None);
    assert!(!due("2026-11-03T07:15:00.000Z").await);
}

/// Claimers racing for one slot: exactly one gets it. It queued one scan, counted once, moved
/// the schedule to the next slot and recorded the run; the others got `None`; a claim of the
/// old slot afterwards gets `None` too.
pub async fn schedule_slot_is_claimed_once_by_concurrent_claimers(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Schedule race").await;
    let site = seed_property(&*store, &org, at("2026-11-01T00:00:00.000Z")).await;
    let (slot, next) = (
        at("2026-11-02T06:00:00.000Z"),
        at("2026-11-09T06:00:00.000Z"),
    );
    store
        .put_schedule(&schedule(&site, slot, at("2026-11-01T10:00:00.000Z")))
        .await
        .unwrap();
    let now = at("2026-11-02T06:00:01.000Z");
    let claims: Vec<_> = (0..8)
        .map(|_| {
            let store = Arc::clone(&store);
            let claim = claim(&org, &site, slot, next, now, 1_000);
            tokio::spawn(async move { store.claim_schedule_slot(&claim).await.unwrap() })
        })
        .collect();
    let mut won = Vec::new();
    for handle in claims {
        if let Some(run) = handle.await.expect("a claimer") {
            won.push(run);
        }
    }
    assert_eq!(won.len(), 1, "{won:?}");
    let run = &won[0];
    assert_eq!(
        (run.slot, run.outcome, run.claimed_at),
        (slot, SlotOutcome::Queued, now)
    );
    let job_id = run.job_id.clone().expect("the queued scan");
    let queued = store.get_job(&job_id).await.unwrap().expect("the job");
    assert_eq!(
        (queued.status, queued.property_id()),
        (JobStatus::Pending, Some(&site.id))
    );
    assert_eq!(
        store
            .get_usage(&org.id, &now.month_key())
            .await
            .unwrap()
            .scans,
        1
    );
    assert_eq!(
        store
            .get_schedule(&site.id)
            .await
            .unwrap()
            .unwrap()
            .next_run_at,
        next
    );
    assert_eq!(store.schedule_runs(&site.id, 10).await.unwrap(), won);
    assert_eq!(
        store
            .claim_schedule_slot(&claim(&org, &site, slot, next, now, 1_000))
            .await
            .unwrap(),
        None
    );
}

/// A slot that finds a scan of the property pending is skipped and recorded, queueing
/// nothing; a slot that finds the quota spent queues nothing, is recorded, and writes its
/// `scan.schedule.failed` event. Either way the schedule moves on.
pub async fn schedule_slot_skipped_while_busy_or_over_quota(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Schedule skips").await;
    let site = seed_property(&*store, &org, at("2026-11-01T00:00:00.000Z")).await;
    let slots = [
        at("2026-11-02T06:00:00.000Z"),
        at("2026-11-09T06:00:00.000Z"),
        at("2026-11-16T06:00:00.000Z"),
    ];
    store
        .put_schedule(&schedule(&site, slots[0], at("2026-11-01T10:00:00.000Z")))
        .await
        .unwrap();
    // A scan of the property is pending (queued by hand): the first slot is skipped.
    let manual = job(&org, &site, at("2026-11-02T05:59:00.000Z"));
    store
        .insert_job_counted(&manual, "2026-11", 1_000)
        .await
        .unwrap();
    let now = at("2026-11-02T06:00:00.500Z");
    let busy = store
        .claim_schedule_slot(&claim(&org, &site, slots[0], slots[1], now, 1_000))
        .await
        .unwrap()
        .expect("claimed");
    assert_eq!(
        (busy.outcome, busy.job_id.clone()),
        (SlotOutcome::SkippedBusy, None)
    );
    assert_eq!(store.get_usage(&org.id, "2026-11").await.unwrap().scans, 1);

    // Once it is done, the next slot finds the quota (1 scan) spent.
    store
        .cancel_job(&manual.id, at("2026-11-03T00:00:00.000Z"))
        .await
        .unwrap();
    let later = at("2026-11-09T06:00:00.200Z");
    let over = store
        .claim_schedule_slot(&claim(&org, &site, slots[1], slots[2], later, 1))
        .await
        .unwrap()
        .expect("claimed");
    assert_eq!(
        (over.outcome, over.job_id.clone()),
        (SlotOutcome::QuotaExceeded, None)
    );
    assert_eq!(store.get_usage(&org.id, "2026-11").await.unwrap().scans, 1);
    let events = store.list_events(None, 1_000_000).await.unwrap();
    let sent: Vec<_> = events
        .iter()
        .filter(|e| e.organization_id == org.id)
        .filter(|e| e.event_type == EventType::ScanScheduleFailed)
        .collect();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].created_at, later);
    assert_eq!(
        sent[0].subject,
        EventSubject::Snapshot(
            serde_json::json!({"schedule": {"propertyId": site.id, "slot": slots[1]}})
        )
    );
    assert_eq!(
        store
            .get_schedule(&site.id)
            .await
            .unwrap()
            .unwrap()
            .next_run_at,
        slots[2]
    );
    assert_eq!(
        store.schedule_runs(&site.id, 10).await.unwrap(),
        vec![over, busy]
    );
    assert_eq!(store.schedule_runs(&site.id, 1).await.unwrap().len(), 1);
}

/// A daily 02:30 schedule in Europe/Berlin across the night the clocks go forward (02:30 does
/// not exist on 2027-03-28: the slot moves on by the hour skipped, to 03:30 CEST) and the
/// night they go back (02:30 happens twice on 2027-10-31: the first one): each slot is due
/// from its instant on, not a moment before, and claimed once.
pub async fn schedule_slots_cross_daylight_saving_changes_in_berlin(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Schedule DST").await;
    let site = seed_property(&*store, &org, at("2026-11-01T00:00:00.000Z")).await;
    let cadence = Cadence::new(Frequency::Daily, "02:30", "Europe/Berlin", None, None).unwrap();
    let expected = [
        // CET, +01:00.
        "2027-03-27T01:30:00.000Z",
        // The spring-forward night: 03:30 CEST.
        "2027-03-28T01:30:00.000Z",
        // CEST, +02:00.
        "2027-03-29T00:30:00.000Z",
    ];
    let autumn = [
        "2027-10-30T00:30:00.000Z",
        // The first 02:30 of the night the clocks go back (CEST).
        "2027-10-31T00:30:00.000Z",
        // CET again.
        "2027-11-01T01:30:00.000Z",
    ];
    for run in [expected, autumn] {
        let first = at(run[0]);
        let set_at = first.plus(chrono::Duration::hours(-12));
        let mut made = schedule(&site, cadence.next_slot(set_at), set_at);
        made.cadence = cadence.clone();
        store.put_schedule(&made).await.unwrap();
        let mut slot = store
            .get_schedule(&site.id)
            .await
            .unwrap()
            .unwrap()
            .next_run_at;
        for want in run {
            assert_eq!(slot, at(want));
            let before = slot.plus(chrono::Duration::milliseconds(-1));
            let mine = |due: Vec<ScanSchedule>| due.into_iter().any(|s| s.property_id == site.id);
            assert!(
                !mine(store.due_schedules(before, 100_000).await.unwrap()),
                "{want}"
            );
            assert!(
                mine(store.due_schedules(slot, 100_000).await.unwrap()),
                "{want}"
            );
            let next = cadence.next_slot(slot);
            let claimed = store
                .claim_schedule_slot(&claim(&org, &site, slot, next, slot, 1_000))
                .await
                .unwrap()
                .expect("claimed");
            assert_eq!(claimed.slot, at(want));
            // Its scan is done before the next slot (so that one is not skipped).
            if let Some(job_id) = &claimed.job_id {
                store.cancel_job(job_id, slot).await.unwrap();
            }
            assert_eq!(
                store
                    .claim_schedule_slot(&claim(&org, &site, slot, next, slot, 1_000))
                    .await
                    .unwrap(),
                None
            );
            slot = store
                .get_schedule(&site.id)
                .await
                .unwrap()
                .unwrap()
                .next_run_at;
            assert_eq!(slot, next);
        }
    }
    let runs = store.schedule_runs(&site.id, 10).await.unwrap();
    assert_eq!(runs.len(), 6);
    assert!(runs.iter().all(|r| r.outcome == SlotOutcome::Queued));
}
