//! Test support (feature `testing`): a migrated store on a database of its own.
//!
//! Every call of [`fresh_database`] creates a new, uniquely named database, so tests run in
//! parallel without seeing each other's rows. The server is the one `DATABASE_URL` names, or
//! `postgres://postgres@127.0.0.1:5432/test`. A missing server is a test failure, never a
//! silent skip.
//!
//! Test databases are named `xf_test_<unix seconds>_<unique suffix>`. The first call in a
//! process drops those older than an hour that nobody is connected to, so repeated runs do not
//! fill the server.
//!
//! Each is a copy of a template database migrated once per set of migrations
//! (`xf_template_<digest of the migrations>`, made by the first process that needs it, under
//! an advisory lock): copying it is a file copy, where migrating every test's database ran
//! thirty migrations' DDL each time. The copy is then migrated as any database is (a no-op),
//! so a test still sees what `PgStore::migrate` leaves.

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Executor, Row};

use crate::{pool_options, PgStore};

/// The server used when `DATABASE_URL` is not set.
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// Prefix of the databases [`fresh_database`] creates.
pub const DATABASE_PREFIX: &str = "xf_test_";

/// Test databases older than this, with no session, are dropped.
const STALE_AFTER: Duration = Duration::from_secs(60 * 60);

static CLEANED_UP: AtomicBool = AtomicBool::new(false);
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// The URL of the server the tests use: `DATABASE_URL` when set, else
/// [`DEFAULT_DATABASE_URL`].
pub fn server_url() -> String {
    std::env::var("DATABASE_URL")
        .ok()
        .filter(|url| !url.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_DATABASE_URL.to_owned())
}

/// A new database on the test server, migrated, with a store over it.
///
/// # Panics
///
/// When no PostgreSQL server answers at [`server_url`], or it refuses to create a database:
/// the tests that call this need one.
pub async fn fresh_database() -> PgStore {
    let url = server_url();
    let options = PgConnectOptions::from_str(&url)
        .unwrap_or_else(|error| panic!("DATABASE_URL {url:?} is not a PostgreSQL URL: {error}"));
    let admin = connect_admin(&url, &options).await;
    if !CLEANED_UP.swap(true, Ordering::SeqCst) {
        drop_stale_databases(&admin).await;
    }

    let template = migrated_template(&admin, &options).await;
    let name = unique_name();
    admin
        .execute(format!("CREATE DATABASE \"{name}\" TEMPLATE \"{template}\"").as_str())
        .await
        .unwrap_or_else(|error| panic!("cannot create test database {name} on {url}: {error}"));
    admin.close().await;

    let pool = pool_options()
        .connect_with(options.database(&name))
        .await
        .unwrap_or_else(|error| panic!("cannot connect to test database {name}: {error}"));
    let store = PgStore::new(pool);
    store
        .migrate()
        .await
        .unwrap_or_else(|error| panic!("cannot migrate test database {name}: {error}"));
    store
}

/// Prefix of the template databases.
const TEMPLATE_PREFIX: &str = "xf_template_";

/// The name of the template database of today's migrations, made and migrated if the server
/// has none: under an advisory lock, so that of concurrent test processes one makes it and
/// the others wait for it.
async fn migrated_template(admin: &PgPool, options: &PgConnectOptions) -> String {
    let name = format!("{TEMPLATE_PREFIX}{}", migrations_digest());
    // One session holds the lock, checks and makes the template, and lets go.
    let mut session = admin
        .acquire()
        .await
        .unwrap_or_else(|error| panic!("no session for the template database: {error}"));
    sqlx::query("SELECT pg_advisory_lock(hashtext($1))")
        .bind(&name)
        .execute(&mut *session)
        .await
        .unwrap_or_else(|error| panic!("cannot lock the template database's making: {error}"));
    let exists = sqlx::query("SELECT 1 FROM pg_database WHERE datname = $1")
        .bind(&name)
        .fetch_optional(&mut *session)
        .await
        .unwrap_or_else(|error| panic!("cannot look for the template database: {error}"))
        .is_some();
    if !exists {
        // Made under another name and renamed when migrated, so that a process that died
        // half-way leaves no template that looks finished.
        let building = format!("{name}_building");
        for statement in [
            format!("DROP DATABASE IF EXISTS \"{building}\""),
            format!("CREATE DATABASE \"{building}\""),
        ] {
            session
                .execute(statement.as_str())
                .await
                .unwrap_or_else(|error| panic!("cannot make the template database: {error}"));
        }
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone().database(&building))
            .await
            .unwrap_or_else(|error| panic!("cannot connect to the template database: {error}"));
        PgStore::new(pool.clone())
            .migrate()
            .await
            .unwrap_or_else(|error| panic!("cannot migrate the template database: {error}"));
        pool.close().await;
        session
            .execute(format!("ALTER DATABASE \"{building}\" RENAME TO \"{name}\"").as_str())
            .await
            .unwrap_or_else(|error| panic!("cannot finish the template database: {error}"));
    }
    sqlx::query("SELECT pg_advisory_unlock(hashtext($1))")
        .bind(&name)
        .execute(&mut *session)
        .await
        .unwrap_or_else(|error| panic!("cannot unlock the template database's making: {error}"));
    name
}

/// A digest (64-bit FNV-1a) of every migration's version and checksum (sqlx's SHA-384 of its
/// SQL): a new or changed migration names a new template.
fn migrations_digest() -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for migration in crate::MIGRATOR.iter() {
        let version = migration.version.to_be_bytes();
        for byte in version.iter().chain(migration.checksum.iter()) {
            hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

/// A single-connection pool on the server's maintenance database: the one in the URL, or
/// `postgres` when that one does not exist.
async fn connect_admin(url: &str, options: &PgConnectOptions) -> PgPool {
    let admin_pool = |options: PgConnectOptions| {
        PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
    };
    match admin_pool(options.clone()).await {
        Ok(pool) => pool,
        Err(sqlx::Error::Database(error)) if error.code().as_deref() == Some("3D000") => {
            admin_pool(options.clone().database("postgres"))
                .await
                .unwrap_or_else(|error| no_server(url, &error))
        }
        Err(error) => no_server(url, &error),
    }
}

fn no_server(url: &str, error: &sqlx::Error) -> ! {
    panic!(
        "no usable PostgreSQL server at {url}: {error}. The PostgreSQL tests need one: set \
         DATABASE_URL to a server where the user may create databases, or run one on \
         127.0.0.1:5432 accepting user postgres without a password."
    )
}

/// `xf_test_<unix seconds>_<process id><sequence><nanoseconds>`: unique across concurrent
/// tests of one process (the sequence) and across processes (the process id and clock).
fn unique_name() -> String {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "{DATABASE_PREFIX}{}_{:x}_{:x}_{:x}",
        since_epoch.as_secs(),
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed),
        since_epoch.subsec_nanos()
    )
}

/// Drops test databases created more than [`STALE_AFTER`] ago. Without `FORCE`: a database a
/// session is still using (a long test run elsewhere) fails to drop and is kept.
async fn drop_stale_databases(admin: &PgPool) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let Ok(rows) = sqlx::query("SELECT datname FROM pg_database WHERE starts_with(datname, $1)")
        .bind(DATABASE_PREFIX)
        .fetch_all(admin)
        .await
    else {
        return;
    };
    for row in rows {
        let Ok(name) = row.try_get::<String, _>("datname") else {
            continue;
        };
        let created = name
            .strip_prefix(DATABASE_PREFIX)
            .and_then(|rest| rest.split('_').next())
            .and_then(|secs| secs.parse::<u64>().ok());
        let stale = created.is_some_and(|secs| now.saturating_sub(secs) > STALE_AFTER.as_secs());
        let safe_name = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if stale && safe_name {
            if let Err(error) = admin
                .execute(format!("DROP DATABASE IF EXISTS \"{name}\"").as_str())
                .await
            {
                tracing::debug!(%name, %error, "kept a stale test database");
            }
        }
    }
    // Templates of other migrations (an older checkout's) go too; one in use is kept.
    let current = format!("{TEMPLATE_PREFIX}{}", migrations_digest());
    let Ok(rows) = sqlx::query("SELECT datname FROM pg_database WHERE starts_with(datname, $1)")
        .bind(TEMPLATE_PREFIX)
        .fetch_all(admin)
        .await
    else {
        return;
    };
    for name in rows
        .iter()
        .filter_map(|row| row.try_get::<String, _>("datname").ok())
    {
        let safe_name = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if safe_name && !name.starts_with(&current) {
            if let Err(error) = admin
                .execute(format!("DROP DATABASE IF EXISTS \"{name}\"").as_str())
                .await
            {
                tracing::debug!(%name, %error, "kept another checkout's template database");
            }
        }
    }
}
