//! Helpers for the end-to-end suite live in `e2e/`; this library is empty on purpose.
