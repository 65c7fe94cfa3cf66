//! Rebuilds the crate when a migration file is added or changed: `sqlx::migrate!` embeds
//! the migration folders at compile time, and cargo would not notice a new file otherwise.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
