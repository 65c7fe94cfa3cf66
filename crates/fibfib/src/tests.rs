//! Scenario tests per ruling and property tests over seeded random games.
