//! End-to-end tests of xf live in `tests/`; see the README.
