//! End-to-end suite (filled in below).
