//! Wall-clock helpers of the core: Unix milliseconds, and UTC calendar days (a daily
//! deal's seed is published once its day is over).

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The UTC calendar day of a Unix-milliseconds time, as `YYYY-MM-DD` (proleptic
/// Gregorian; Howard Hinnant's civil-from-days).
pub fn utc_day(ms: i64) -> String {
    let z = ms.div_euclid(86_400_000) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The first millisecond (Unix) of a UTC day written `YYYY-MM-DD`, or `None` if that is
/// not a real calendar day. (Days-from-civil, the inverse of [`utc_day`].)
pub fn day_start_ms(day: &str) -> Option<i64> {
    let b = day.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| day.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let ms = (era * 146_097 + doe - 719_468) * 86_400_000;
    // Month 13 or day 31 of a short month land on another day: refuse them.
    (utc_day(ms) == day).then_some(ms)
}

#[cfg(test)]
mod tests {
    use super::{day_start_ms, utc_day};

    #[test]
    fn day_starts() {
        assert_eq!(day_start_ms("1970-01-01"), Some(0));
        assert_eq!(day_start_ms("2000-02-29"), Some(951_782_400_000));
        assert_eq!(
            day_start_ms("2026-11-22").map(utc_day).as_deref(),
            Some("2026-11-22")
        );
        for bad in [
            "2026-13-01",
            "2026-02-30",
            "2025-02-29",
            "2026-11-2",
            "2026/11/22",
            "x",
        ] {
            assert_eq!(day_start_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn utc_days() {
        assert_eq!(utc_day(0), "1970-01-01");
        assert_eq!(utc_day(86_399_999), "1970-01-01");
        assert_eq!(utc_day(86_400_000), "1970-01-02");
        assert_eq!(utc_day(951_782_400_000), "2000-02-29");
        assert_eq!(utc_day(1_795_322_425_202), "2026-11-22");
        assert_eq!(utc_day(-1), "1969-12-31");
    }
}
