//! Behaviours of organizations and their API keys.

use std::sync::Arc;

use super::{
    api_key, at, minutes, organization, random_key, run_concurrently, seed_organization, tally,
    unique, TestStore,
};
use crate::auth;
use crate::error::StoreError;
use crate::ids::{ApiKeyId, OrganizationId};
use crate::model::{ApiKey, KeyMode, Organization};
use crate::plans::LimitOverrides;
use crate::time::Timestamp;

/// An inserted organization reads back equal, every field included; an unknown id is `None`.
pub async fn organization_insert_and_get(store: Arc<dyn TestStore>) {
    let mut org = organization(&unique("Acme"));
    org.plan = "starter".to_owned();
    org.shop_domain = Some("acme.myshopify.com".to_owned());
    org.limits = LimitOverrides {
        scans_per_month: Some(7),
        max_depth: Some(4),
        ..LimitOverrides::default()
    };
    org.created_at = at("2026-11-02T03:04:05.678Z");
    store.insert_organization(&org).await.unwrap();

    let plain = organization(&unique("Plain"));
    store.insert_organization(&plain).await.unwrap();

    assert_eq!(store.get_organization(&org.id).await.unwrap(), Some(org));
    assert_eq!(
        store.get_organization(&plain.id).await.unwrap(),
        Some(plain)
    );
    assert_eq!(
        store
            .get_organization(&OrganizationId::new())
            .await
            .unwrap(),
        None
    );
}

/// `find_organization_by_name` matches the exact name and returns the first-created
/// organization (on equal creation times, the smallest id).
pub async fn organization_find_by_name_returns_first_created(store: Arc<dyn TestStore>) {
    let name = unique("Shared Name");
    let mut second = organization(&name);
    second.created_at = minutes(60);
    let mut first = organization(&name);
    first.created_at = minutes(0);
    let mut third = organization(&name);
    third.created_at = minutes(120);
    for org in [&second, &third, &first] {
        store.insert_organization(org).await.unwrap();
    }
    store
        .insert_organization(&organization(&unique("Other")))
        .await
        .unwrap();

    assert_eq!(
        store.find_organization_by_name(&name).await.unwrap(),
        Some(first)
    );
    assert_eq!(
        store
            .find_organization_by_name(&name.to_uppercase())
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .find_organization_by_name(&format!("{name} "))
            .await
            .unwrap(),
        None
    );

    let tie_name = unique("Tie");
    let smaller = organization(&tie_name);
    let larger = organization(&tie_name);
    assert!(smaller.id < larger.id, "new ids are time-ordered");
    store.insert_organization(&larger).await.unwrap();
    store.insert_organization(&smaller).await.unwrap();
    assert_eq!(
        store.find_organization_by_name(&tie_name).await.unwrap(),
        Some(smaller)
    );
}

/// `update_organization` sets the plan and/or replaces (not merges) the limit overrides,
/// leaves what it is not given alone, and returns `None` for an unknown id.
pub async fn organization_update_plan_and_limits(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Updatable").await;

    let updated = store
        .update_organization(&org.id, Some("starter"), None)
        .await
        .unwrap()
        .expect("known organization");
    let expected = Organization {
        plan: "starter".to_owned(),
        ..org.clone()
    };
    assert_eq!(updated, expected);

    let first_limits = LimitOverrides {
        max_active_keys: Some(5),
        scans_per_month: Some(50),
        ..LimitOverrides::default()
    };
    let updated = store
        .update_organization(&org.id, None, Some(&first_limits))
        .await
        .unwrap()
        .expect("known organization");
    let expected = Organization {
        limits: first_limits,
        ..expected
    };
    assert_eq!(updated, expected);

    let second_limits = LimitOverrides {
        read_per_hour: Some(10),
        ..LimitOverrides::default()
    };
    let updated = store
        .update_organization(&org.id, Some("free"), Some(&second_limits))
        .await
        .unwrap()
        .expect("known organization");
    let expected = Organization {
        plan: "free".to_owned(),
        limits: second_limits,
        ..expected
    };
    assert_eq!(updated, expected);

    let unchanged = store
        .update_organization(&org.id, None, None)
        .await
        .unwrap();
    assert_eq!(unchanged.as_ref(), Some(&expected));
    assert_eq!(
        store.get_organization(&org.id).await.unwrap(),
        Some(expected)
    );

    assert_eq!(
        store
            .update_organization(&OrganizationId::new(), Some("free"), None)
            .await
            .unwrap(),
        None
    );
}

/// An inserted key is found by its hash together with its organization, revoked or not; an
/// unknown hash is `None`.
pub async fn api_key_insert_and_find_by_hash(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Keys").await;
    let live = random_key(&org.id, KeyMode::Live, minutes(1));
    let test = random_key(&org.id, KeyMode::Test, minutes(2));
    store.insert_api_key(&live, 10).await.unwrap();
    store.insert_api_key(&test, 10).await.unwrap();

    assert_eq!(
        store.find_api_key(&live.key_hash).await.unwrap(),
        Some((live.clone(), org.clone()))
    );
    assert_eq!(
        store.find_api_key(&test.key_hash).await.unwrap(),
        Some((test.clone(), org.clone()))
    );
    assert_eq!(
        store
            .find_api_key(&auth::hash_key(&auth::generate_key(KeyMode::Live)))
            .await
            .unwrap(),
        None
    );

    let revoked = store
        .revoke_api_key(&live.id, minutes(3))
        .await
        .unwrap()
        .expect("known key");
    let expected = ApiKey {
        revoked_at: Some(minutes(3)),
        ..live.clone()
    };
    assert_eq!(revoked, expected);
    assert_eq!(
        store.find_api_key(&live.key_hash).await.unwrap(),
        Some((expected, org))
    );
}

/// A second key with a hash that is already stored, in the same or another organization, is
/// [`StoreError::Duplicate`] and is not stored.
pub async fn api_key_duplicate_hash_rejected(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Dup keys").await;
    let other_org = seed_organization(&*store, "Other dup keys").await;
    let secret = auth::generate_key(KeyMode::Live);
    let first = api_key(&org.id, KeyMode::Live, &secret, minutes(1));
    store.insert_api_key(&first, 10).await.unwrap();

    let same_org = api_key(&org.id, KeyMode::Live, &secret, minutes(2));
    assert!(matches!(
        store.insert_api_key(&same_org, 10).await,
        Err(StoreError::Duplicate(_))
    ));
    let other = api_key(&other_org.id, KeyMode::Live, &secret, minutes(3));
    assert!(matches!(
        store.insert_api_key(&other, 10).await,
        Err(StoreError::Duplicate(_))
    ));

    assert_eq!(
        store.list_api_keys(&org.id).await.unwrap(),
        vec![first.clone()]
    );
    assert_eq!(store.list_api_keys(&other_org.id).await.unwrap(), vec![]);
    assert_eq!(
        store.find_api_key(&auth::hash_key(&secret)).await.unwrap(),
        Some((first, org))
    );
}

/// `insert_api_key` refuses with [`StoreError::LimitReached`] when the organization already
/// has `max_active` unrevoked keys, storing nothing; revoked keys and other organizations'
/// keys do not count.
pub async fn api_key_max_active_enforced(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Capped").await;
    let neighbour = seed_organization(&*store, "Neighbour").await;
    for n in 0..3 {
        let key = random_key(&neighbour.id, KeyMode::Live, minutes(n));
        store.insert_api_key(&key, 10).await.unwrap();
    }

    let new_key = |n: i64| random_key(&org.id, KeyMode::Live, minutes(n));
    let first = new_key(1);
    let second = new_key(2);
    store.insert_api_key(&first, 2).await.unwrap();
    store.insert_api_key(&second, 2).await.unwrap();

    let third = new_key(3);
    assert!(matches!(
        store.insert_api_key(&third, 2).await,
        Err(StoreError::LimitReached(_))
    ));
    assert_eq!(store.find_api_key(&third.key_hash).await.unwrap(), None);
    assert_eq!(
        store.list_api_keys(&org.id).await.unwrap(),
        vec![first.clone(), second.clone()]
    );

    let revoked_first = store
        .revoke_api_key(&first.id, minutes(4))
        .await
        .unwrap()
        .expect("known key");
    store.insert_api_key(&third, 2).await.unwrap();
    let fourth = new_key(5);
    assert!(matches!(
        store.insert_api_key(&fourth, 2).await,
        Err(StoreError::LimitReached(_))
    ));
    assert_eq!(
        store.list_api_keys(&org.id).await.unwrap(),
        vec![revoked_first, second, third]
    );

    let empty_org = seed_organization(&*store, "No keys allowed").await;
    let refused = random_key(&empty_org.id, KeyMode::Test, minutes(6));
    assert!(matches!(
        store.insert_api_key(&refused, 0).await,
        Err(StoreError::LimitReached(_))
    ));
    assert_eq!(store.list_api_keys(&empty_org.id).await.unwrap(), vec![]);
}

/// Concurrent inserts never push an organization past `max_active`: of 10 simultaneous
/// inserts with a cap of 3, exactly 3 succeed.
pub async fn api_key_concurrent_inserts_respect_max_active(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Racing keys").await;
    let results = run_concurrently(10, |n| {
        let store = Arc::clone(&store);
        let key = random_key(&org.id, KeyMode::Live, minutes(n as i64));
        async move { store.insert_api_key(&key, 3).await }
    })
    .await;
    assert_eq!(tally(&results), (3, 7), "{results:?}");
    assert_eq!(store.list_api_keys(&org.id).await.unwrap().len(), 3);
}

/// `revoke_api_key` sets `revokedAt` once: revoking again keeps the first time. An unknown id
/// is `None`.
pub async fn api_key_revoke_keeps_first_time(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Revoker").await;
    let key = random_key(&org.id, KeyMode::Live, minutes(0));
    store.insert_api_key(&key, 5).await.unwrap();

    let expected = ApiKey {
        revoked_at: Some(minutes(10)),
        ..key.clone()
    };
    assert_eq!(
        store.revoke_api_key(&key.id, minutes(10)).await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(
        store.revoke_api_key(&key.id, minutes(20)).await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(store.list_api_keys(&org.id).await.unwrap(), vec![expected]);
    assert_eq!(
        store
            .revoke_api_key(&ApiKeyId::new(), minutes(30))
            .await
            .unwrap(),
        None
    );
}

/// `list_api_keys` returns the organization's keys, revoked or not, oldest first (equal
/// creation times: smallest id first), and no other organization's.
pub async fn api_key_list_oldest_first(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Listing keys").await;
    let other = seed_organization(&*store, "Other listing keys").await;
    let make = |org_id: &OrganizationId, n: i64| {
        api_key(
            org_id,
            KeyMode::Live,
            &auth::generate_key(KeyMode::Live),
            minutes(n),
        )
    };
    let oldest = make(&org.id, 1);
    let tie_small = make(&org.id, 5);
    let tie_large = make(&org.id, 5);
    let middle = make(&org.id, 3);
    let foreign = make(&other.id, 2);
    for key in [&tie_large, &middle, &foreign, &tie_small, &oldest] {
        store.insert_api_key(key, 10).await.unwrap();
    }
    let revoked_middle = store
        .revoke_api_key(&middle.id, minutes(6))
        .await
        .unwrap()
        .expect("known key");

    assert_eq!(
        store.list_api_keys(&org.id).await.unwrap(),
        vec![oldest, revoked_middle, tie_small, tie_large]
    );
    assert_eq!(store.list_api_keys(&other.id).await.unwrap(), vec![foreign]);
    assert_eq!(
        store.list_api_keys(&OrganizationId::new()).await.unwrap(),
        vec![]
    );
}

/// `insert_organization_with_keys` stores the organization and all its keys. When one key's
/// hash is already stored it is [`StoreError::Duplicate`] and stores nothing: neither the
/// organization nor any of its other keys.
pub async fn organization_with_keys_inserted_atomically(store: Arc<dyn TestStore>) {
    let org = organization(&unique("With keys"));
    let live = random_key(&org.id, KeyMode::Live, minutes(0));
    let test = random_key(&org.id, KeyMode::Test, minutes(1));
    store
        .insert_organization_with_keys(&org, &[live.clone(), test.clone()])
        .await
        .unwrap();
    assert_eq!(
        store.get_organization(&org.id).await.unwrap(),
        Some(org.clone())
    );
    assert_eq!(
        store.find_api_key(&live.key_hash).await.unwrap(),
        Some((live.clone(), org.clone()))
    );
    assert_eq!(
        store.find_api_key(&test.key_hash).await.unwrap(),
        Some((test.clone(), org.clone()))
    );
    assert_eq!(
        store.list_api_keys(&org.id).await.unwrap(),
        vec![live.clone(), test]
    );

    // The duplicate comes last, so a backend that writes key by key has stored the others
    // (and the organization) before it fails.
    let refused = organization(&unique("Refused with keys"));
    let fresh = random_key(&refused.id, KeyMode::Test, minutes(2));
    let mut duplicate = random_key(&refused.id, KeyMode::Live, minutes(3));
    duplicate.key_hash = live.key_hash.clone();
    assert!(matches!(
        store
            .insert_organization_with_keys(&refused, &[fresh.clone(), duplicate])
            .await,
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(store.get_organization(&refused.id).await.unwrap(), None);
    assert_eq!(store.find_api_key(&fresh.key_hash).await.unwrap(), None);
    assert_eq!(store.list_api_keys(&refused.id).await.unwrap(), vec![]);
    assert_eq!(
        store.find_api_key(&live.key_hash).await.unwrap(),
        Some((live, org)),
        "the stored key is untouched"
    );

    let twins = organization(&unique("Twin keys"));
    let secret = auth::generate_key(KeyMode::Live);
    let first = api_key(&twins.id, KeyMode::Live, &secret, minutes(4));
    let second = api_key(&twins.id, KeyMode::Live, &secret, minutes(5));
    assert!(matches!(
        store
            .insert_organization_with_keys(&twins, &[first, second])
            .await,
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(store.get_organization(&twins.id).await.unwrap(), None);
    assert_eq!(
        store.find_api_key(&auth::hash_key(&secret)).await.unwrap(),
        None
    );
}

/// `list_organizations` pages every organization newest first (equal creation times: the
/// larger id first), starting strictly after the page's position and taking at most its
/// limit. (The organizations are made at a random time of 1970s so that other behaviours'
/// records, made later, sort before the position.)
pub async fn organization_list_newest_first_by_page(store: Arc<dyn TestStore>) {
    use rand::Rng;
    let start =
        Timestamp::from_unix_millis(rand::thread_rng().gen_range(1_000_000..200_000_000_000))
            .expect("a valid time");
    let later = start.plus(chrono::Duration::minutes(1));
    let make = |at: Timestamp| {
        let mut org = organization(&unique("Listed"));
        org.created_at = at;
        org
    };
    let oldest = make(start);
    let (tie_a, tie_b) = (make(later), make(later));
    for org in [&tie_a, &oldest, &tie_b] {
        store.insert_organization(org).await.unwrap();
    }
    let (tie_large, tie_small) = if tie_a.id > tie_b.id {
        (tie_a, tie_b)
    } else {
        (tie_b, tie_a)
    };

    let just_after = crate::store::After {
        created_at: later.plus(chrono::Duration::milliseconds(1)),
        id: String::new(),
    };
    let first = store
        .list_organizations(&crate::store::PageRequest {
            limit: 2,
            after: Some(just_after),
        })
        .await
        .unwrap();
    assert_eq!(first, vec![tie_large, tie_small.clone()]);
    let second = store
        .list_organizations(&crate::store::PageRequest {
            limit: 1,
            after: Some(crate::store::After {
                created_at: tie_small.created_at,
                id: tie_small.id.to_string(),
            }),
        })
        .await
        .unwrap();
    assert_eq!(second, vec![oldest]);
    let whole = store
        .list_organizations(&crate::store::PageRequest {
            limit: 3,
            after: None,
        })
        .await
        .unwrap();
    assert_eq!(whole.len(), 3);
    assert!(whole
        .windows(2)
        .all(|pair| (pair[0].created_at, &pair[0].id) > (pair[1].created_at, &pair[1].id)));
}

/// `touch_api_key` moves a key's `last_used_at` forward only: an earlier time keeps the later
/// one; a revoked key is touched too; an unknown id changes nothing and is no error. Its prefix
/// reads back as stored.
pub async fn api_key_touch_moves_last_use_forward(store: Arc<dyn TestStore>) {
    let org = seed_organization(&*store, "Touching keys").await;
    let key = random_key(&org.id, KeyMode::Live, minutes(0));
    let other = random_key(&org.id, KeyMode::Test, minutes(1));
    store.insert_api_key(&key, 5).await.unwrap();
    store.insert_api_key(&other, 5).await.unwrap();
    let last_used = |at: Option<i64>| ApiKey {
        last_used_at: at.map(minutes),
        ..key.clone()
    };

    store.touch_api_key(&key.id, minutes(5)).await.unwrap();
    assert_eq!(
        store
            .find_api_key(&key.key_hash)
            .await
            .unwrap()
            .map(|(k, _)| k),
        Some(last_used(Some(5)))
    );
    store.touch_api_key(&key.id, minutes(3)).await.unwrap();
    store
        .touch_api_key(&ApiKeyId::new(), minutes(4))
        .await
        .unwrap();
    assert_eq!(
        store.list_api_keys(&org.id).await.unwrap(),
        vec![last_used(Some(5)), other.clone()]
    );
    store.revoke_api_key(&key.id, minutes(6)).await.unwrap();
    store.touch_api_key(&key.id, minutes(9)).await.unwrap();
    let found = store.find_api_key(&key.key_hash).await.unwrap().unwrap().0;
    assert_eq!(found.last_used_at, Some(minutes(9)));
    assert_eq!(found.revoked_at, Some(minutes(6)));
    assert_eq!(found.prefix, key.prefix);
    assert!(found.prefix.starts_with("xf_live_") && found.prefix.len() == auth::SHOWN_PREFIX_LEN);
}
