-- The states of connect flows (OAuth authorization requests) already used: each works once.
CREATE TABLE connect_states (
    id         text        PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
