//! The storage conformance suite of `xf-core` run against [`PgStore`], each behaviour on a new
//! database of its own.
//!
//! [`PgStore`]: xf_storage_postgres::PgStore

use std::sync::Arc;

use xf_core::testing::TestStore;

async fn make_store() -> Arc<dyn TestStore> {
    Arc::new(xf_storage_postgres::testing::fresh_database().await)
}

xf_core::store_conformance!(make_store);
