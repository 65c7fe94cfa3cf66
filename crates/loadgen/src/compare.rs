//! Several runs of one load, alternating server builds (or repeating one), and the medians
//! of the figures that matter.
//!
//! One run on this project's machines varies by about a fifth from the next with nothing
//! changed, so a single pair of runs cannot tell a change of a few per cent from the
//! machine's mood. [`compare`] runs each build once per round. The order is reversed
//! every other round, so a drift of the machine falls on both builds alike. Each run has
//! the echo beside it, as any run does. [`Comparison`] prints every run's headline, then
//! per build the median and range of each figure. For the second and later builds it
//! also prints, per round, the figure against the first build's in that same round.

use std::path::PathBuf;

use serde::Serialize;

use crate::{Mode, Options, Report, Target, run};

/// One run of a comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// Index into [`Comparison::builds`].
    pub build: usize,
    /// 0-based.
    pub round: usize,
    pub figures: Figures,
    pub report: Report,
}

/// The headline figures of one run; `None` where the mode or the run has none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Figures {
    /// Server actions per second as a percentage of the echo's messages per second.
    pub pct_of_echo: Option<f64>,
    pub actions_per_sec: Option<f64>,
    /// Opponent sees a move (think, flat) or a person waits for a bot (bots), ms.
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub server_cpu_us_per_action: Option<f64>,
    pub client_cpu_us_per_action: Option<f64>,
    /// Idle mode: the server's memory per open socket, bytes.
    pub bytes_per_socket: Option<f64>,
}

impl Figures {
    pub fn of(r: &Report) -> Figures {
        let mut f = Figures::default();
        if let Some(p) = &r.play {
            f.pct_of_echo = p.ratio_to_echo.map(|x| x * 100.0);
            f.actions_per_sec = p.actions_per_sec;
            let latency = if r.mode == Mode::Bots {
                &p.bot_wait
            } else {
                &p.opponent_sees
            };
            f.latency_p50_ms = latency.as_ref().map(|l| l.p50_ms);
            f.latency_p99_ms = latency.as_ref().map(|l| l.p99_ms);
            f.server_cpu_us_per_action = p.server_cpu_us_per_action;
            f.client_cpu_us_per_action = p
                .client_cores
                .zip(p.actions_per_sec.filter(|a| *a > 0.0))
                .map(|(c, a)| c / a * 1e6);
        }
        if let Some(i) = &r.idle {
            f.bytes_per_socket = i.server_bytes_per_socket;
        }
        f
    }

    /// Each figure with its name, unit and how many decimals to print.
    fn named(&self) -> [(&'static str, Option<f64>, &'static str, usize); 7] {
        [
            ("of the echo", self.pct_of_echo, " %", 1),
            ("actions/s", self.actions_per_sec, "", 0),
            ("latency p50", self.latency_p50_ms, " ms", 2),
            ("latency p99", self.latency_p99_ms, " ms", 2),
            ("server CPU/action", self.server_cpu_us_per_action, " µs", 1),
            (
                "clients' CPU/action",
                self.client_cpu_us_per_action,
                " µs",
                1,
            ),
            ("bytes/socket", self.bytes_per_socket, "", 0),
        ]
    }
}

/// What [`compare`] measured.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// The server binaries, in the order given.
    pub builds: Vec<PathBuf>,
    pub rounds: usize,
    /// In the order they ran.
    pub samples: Vec<Sample>,
}

/// Runs `base` (which must spawn its server: [`Target::Spawn`]) against each of `builds`
/// once per round, for `rounds` rounds, the order of the builds reversed every other
/// round. Each run gets its own database when `base` names none (a fresh SQLite file);
/// with a `--database-url`, every run uses that one. Stops at the first run that fails.
pub async fn compare(
    base: Options,
    builds: Vec<PathBuf>,
    rounds: usize,
) -> Result<Comparison, String> {
    let Target::Spawn {
        database_url,
        bot_budget_ms,
        ..
    } = &base.target
    else {
        return Err("a comparison spawns each build itself: it cannot take --url".into());
    };
    if builds.is_empty() || rounds == 0 {
        return Err("a comparison needs a build and a round".into());
    }
    let mut samples = Vec::with_capacity(builds.len() * rounds);
    for round in 0..rounds {
        for build in order(builds.len(), round) {
            let mut opts = base.clone();
            opts.target = Target::Spawn {
                bin: builds[build].clone(),
                database_url: database_url.clone(),
                bot_budget_ms: *bot_budget_ms,
            };
            let report = run(opts)
                .await
                .map_err(|e| format!("round {}, {}: {e}", round + 1, builds[build].display()))?;
            samples.push(Sample {
                build,
                round,
                figures: Figures::of(&report),
                report,
            });
        }
    }
    Ok(Comparison {
        builds,
        rounds,
        samples,
    })
}

/// The order of `n` builds in `round`: as given, reversed every other round.
fn order(n: usize, round: usize) -> Vec<usize> {
    if round.is_multiple_of(2) {
        (0..n).collect()
    } else {
        (0..n).rev().collect()
    }
}

/// The median of `xs` (the mean of the middle two for an even count); `None` if empty.
fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    Some(if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    })
}

/// A run's place and figures: what the summary reads.
type Row = (usize, usize, Figures);

/// Build `build`'s values of the figure picked by `pick`, in round order.
fn values(rows: &[Row], build: usize, pick: impl Fn(&Figures) -> Option<f64>) -> Vec<f64> {
    let mut v: Vec<(usize, f64)> = rows
        .iter()
        .filter(|(b, _, _)| *b == build)
        .filter_map(|(_, r, f)| Some((*r, pick(f)?)))
        .collect();
    v.sort_by_key(|(r, _)| *r);
    v.into_iter().map(|(_, x)| x).collect()
}

/// Per round in which both ran, in round order: build `build`'s figure divided by the
/// first build's.
fn against_first(rows: &[Row], build: usize, pick: impl Fn(&Figures) -> Option<f64>) -> Vec<f64> {
    let mut rounds: Vec<usize> = rows.iter().map(|(_, r, _)| *r).collect();
    rounds.sort_unstable();
    rounds.dedup();
    rounds
        .into_iter()
        .filter_map(|round| {
            let at = |b: usize| {
                rows.iter()
                    .find(|(rb, rr, _)| *rb == b && *rr == round)
                    .and_then(|(_, _, f)| pick(f))
            };
            let (x, first) = (at(build)?, at(0)?);
            (first != 0.0).then(|| x / first)
        })
        .collect()
}

impl std::fmt::Display for Comparison {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let label = |b: usize| {
            format!(
                "{} ({})",
                (b'A' + b as u8) as char,
                self.builds[b].display()
            )
        };
        for s in &self.samples {
            let parts: Vec<String> = s
                .figures
                .named()
                .iter()
                .filter_map(|(name, v, unit, dp)| Some(format!("{name} {:.*}{unit}", dp, (*v)?)))
                .collect();
            writeln!(
                f,
                "round {} {}: {}",
                s.round + 1,
                (b'A' + s.build as u8) as char,
                parts.join(", ")
            )?;
            for p in &s.report.problems {
                writeln!(f, "  problem: {p}")?;
            }
        }
        let rows: Vec<Row> = self
            .samples
            .iter()
            .map(|s| (s.build, s.round, s.figures))
            .collect();
        writeln!(f, "medians over {} rounds (range):", self.rounds)?;
        for b in 0..self.builds.len() {
            writeln!(f, "  {}", label(b))?;
            for (i, (name, _, unit, dp)) in Figures::default().named().iter().enumerate() {
                let pick = |fig: &Figures| fig.named()[i].1;
                let v = values(&rows, b, pick);
                let Some(m) = median(v.clone()) else {
                    continue;
                };
                let (lo, hi) = v
                    .iter()
                    .fold((f64::MAX, f64::MIN), |(l, h), x| (l.min(*x), h.max(*x)));
                write!(
                    f,
                    "    {name:<20} {m:.dp$}{unit} ({lo:.dp$}-{hi:.dp$})",
                    dp = *dp
                )?;
                if b > 0 {
                    let ratios = against_first(&rows, b, pick);
                    if let Some(rm) = median(ratios.clone()) {
                        let each: Vec<String> = ratios.iter().map(|r| format!("×{r:.3}")).collect();
                        write!(
                            f,
                            "; against A per round {}, median ×{rm:.3}",
                            each.join(" ")
                        )?;
                    }
                }
                writeln!(f)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_orders() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0]), Some(3.0));
        assert_eq!(median(vec![9.0, 1.0, 5.0]), Some(5.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(order(2, 0), vec![0, 1]);
        assert_eq!(order(2, 1), vec![1, 0]);
        assert_eq!(order(3, 2), vec![0, 1, 2]);
    }

    #[test]
    fn figures_by_build_and_against_the_first_per_round() {
        let fig = |pct: f64, cpu: Option<f64>| Figures {
            pct_of_echo: Some(pct),
            server_cpu_us_per_action: cpu,
            ..Figures::default()
        };
        // Rounds as they ran: A B, then B A, then A B; B has no CPU figure in round 2.
        let rows: Vec<Row> = vec![
            (0, 0, fig(8.0, Some(100.0))),
            (1, 0, fig(10.0, Some(90.0))),
            (1, 1, fig(9.0, None)),
            (0, 1, fig(9.0, Some(95.0))),
            (0, 2, fig(10.0, Some(80.0))),
            (1, 2, fig(11.0, Some(88.0))),
        ];
        let pct = |f: &Figures| f.pct_of_echo;
        let cpu = |f: &Figures| f.server_cpu_us_per_action;
        assert_eq!(values(&rows, 0, pct), vec![8.0, 9.0, 10.0]);
        assert_eq!(values(&rows, 1, cpu), vec![90.0, 88.0]);
        assert_eq!(against_first(&rows, 1, pct), vec![1.25, 1.0, 1.1]);
        // A round where either lacks the figure is left out, not counted as zero.
        assert_eq!(against_first(&rows, 1, cpu), vec![0.9, 1.1]);
        assert_eq!(median(against_first(&rows, 1, pct)), Some(1.1));
    }
}
