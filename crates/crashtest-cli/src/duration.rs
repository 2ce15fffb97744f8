//! Human durations: `1.5s`, `200ms`, `10us`, `3m` on the command line, and short forms for
//! output.
//!
//! Virtual time is an integer of nanoseconds, so parsing is exact decimal arithmetic (no
//! floats): `1.5s` is 1,500,000,000 ns.

use std::time::Duration;

/// Units accepted after a number, longest names first so that `ms` is not read as `m`.
const UNITS: [(&str, u64); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("min", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Parses a duration such as `1.5s`, `200ms`, `250us`, `10ns`, `2m`, `1h` (or `0`).
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let bad = || {
        format!(
            "{text:?} is not a duration: write a number and a unit, such as 1.5s, 200ms, 10us or 2m"
        )
    };
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let scale = UNITS
        .iter()
        .find(|(name, _)| *name == unit.trim())
        .map(|(_, scale)| *scale)
        .ok_or_else(bad)?;
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return Err(bad());
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    let mut nanos = whole * u128::from(scale);
    let mut place = u128::from(scale);
    for digit in fraction.chars() {
        let digit = digit.to_digit(10).ok_or_else(bad)?;
        place /= 10;
        nanos += u128::from(digit) * place;
    }
    let nanos = u64::try_from(nanos).map_err(|_| format!("{text:?} is too long a duration"))?;
    Ok(Duration::from_nanos(nanos))
}

/// Nanoseconds of a duration, saturating.
pub(crate) fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// A short form of a virtual time: `0s`, `850ns`, `3.25us`, `16ms`, `1.5s`.
pub(crate) fn short(ns: u64) -> String {
    let (scale, unit) = match ns {
        0 => return "0s".to_owned(),
        1..1_000 => return format!("{ns}ns"),
        1_000..1_000_000 => (1_000, "us"),
        1_000_000..1_000_000_000 => (1_000_000, "ms"),
        _ => (1_000_000_000, "s"),
    };
    let whole = ns / scale;
    let thousandths = (ns % scale) * 1000 / scale;
    if thousandths == 0 {
        format!("{whole}{unit}")
    } else {
        let fraction = format!("{thousandths:03}");
        format!("{whole}.{}{unit}", fraction.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_durations_parse_exactly() {
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("200ms"), Ok(Duration::from_millis(200)));
        assert_eq!(parse("10us"), Ok(Duration::from_micros(10)));
        assert_eq!(parse("7ns"), Ok(Duration::from_nanos(7)));
        assert_eq!(parse("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse("0.000000001s"), Ok(Duration::from_nanos(1)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn malformed_durations_say_what_is_expected() {
        for text in ["", "5", "fast", "1.5x", ".s", "1..2s"] {
            let error = parse(text).unwrap_err();
            assert!(error.contains("such as 1.5s"), "{text}: {error}");
        }
    }

    #[test]
    fn short_forms_trim_trailing_zeros() {
        assert_eq!(short(0), "0s");
        assert_eq!(short(850), "850ns");
        assert_eq!(short(3_250), "3.25us");
        assert_eq!(short(16_000_000), "16ms");
        assert_eq!(short(1_500_000_000), "1.5s");
    }
}
