//! Behaviours of the monthly usage meters.

use std::sync::Arc;

use super::{seed_organization, TestStore, BASE_MONTH};
use crate::model::UsageCounters;

/// `get_usage` is all zeros for a month (or organization) without recorded usage.
pub async fn usage_defaults_to_zero(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Unused").await;
    assert_eq!(
        store.get_usage(&org.id, BASE_MONTH).await.unwrap(),
        UsageCounters::default()
    );
    assert_eq!(
        store.get_usage(&org.id, "1999-01").await.unwrap(),
        UsageCounters::default()
    );
}

/// `add_usage` adds field-wise to one organization's counters of one month and returns the
/// totals; other months and organizations are separate.
pub async fn usage_add_accumulates_per_month_and_organization(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Usage").await;
    let other = seed_organization(&*store, "Usage neighbour").await;
    let first = UsageCounters {
        scans: 1,
        ai_input_tokens: 100,
        ..UsageCounters::default()
    };
    let second = UsageCounters {
        scans: 0,
        ai_input_tokens: 50,
        ai_output_tokens: 5,
        redirects_created: 2,
        images_optimized: 3,
        media_uploads: 4,
        media_bytes: 5_000_000_000,
        posts_published: 6,
        posts_deleted: 7,
    };
    let total = UsageCounters {
        scans: 1,
        ai_input_tokens: 150,
        ai_output_tokens: 5,
        redirects_created: 2,
        images_optimized: 3,
        media_uploads: 4,
        media_bytes: 5_000_000_000,
        posts_published: 6,
        posts_deleted: 7,
    };
    assert_eq!(
        store.add_usage(&org.id, BASE_MONTH, &first).await.unwrap(),
        first
    );
    assert_eq!(
        store.add_usage(&org.id, BASE_MONTH, &second).await.unwrap(),
        total
    );
    assert_eq!(store.get_usage(&org.id, BASE_MONTH).await.unwrap(), total);

    let december = UsageCounters {
        images_optimized: 9,
        ..UsageCounters::default()
    };
    assert_eq!(
        store
            .add_usage(&org.id, "2026-12", &december)
            .await
            .unwrap(),
        december
    );
    assert_eq!(
        store
            .add_usage(&other.id, BASE_MONTH, &second)
            .await
            .unwrap(),
        second
    );
    assert_eq!(store.get_usage(&org.id, BASE_MONTH).await.unwrap(), total);
    assert_eq!(store.get_usage(&org.id, "2026-12").await.unwrap(), december);
    assert_eq!(
        store.get_usage(&other.id, BASE_MONTH).await.unwrap(),
        second
    );
    assert_eq!(
        store
            .add_usage(&org.id, BASE_MONTH, &UsageCounters::default())
            .await
            .unwrap(),
        total
    );
}
