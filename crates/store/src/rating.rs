//! Ratings: how a finished match between people moves their skill estimates, computed by
//! the `skillratings` crate (no hand-written rating maths here). `docs/ratings.md` is the
//! player-facing description of every choice below.
//!
//! Each game has two pools, rated separately and ranked on separate leaderboards:
//!
//! - [`Pool::Duel`]: matches with exactly two people, rated with **Glicko-2** (Glickman,
//!   "Example of the Glicko-2 system", 2013): start at 1500 / RD 350 / volatility 0.06,
//!   τ = 0.5, each match its own rating period (so RD shrinks as one plays and does not
//!   grow with idle time: there is no decay between matches).
//! - [`Pool::Multi`]: matches with three to five people, rated with **Weng-Lin**
//!   (Weng & Lin 2011, the Bradley–Terry full-pairing model, known as OpenSkill): start at
//!   μ 25 / σ 25/3, β = 25/6, every person a team of one, ranked by their place.
//!
//! Only people count: bot seats are left out before anything is rated, so a match with a
//! bot and two people is a duel between those two, and one with fewer than two people is
//! not rated at all (nobody can farm rating against bots).
//!
//! Places: winners share first place; the others follow by final score, higher first
//! (equal scores share a place); a seat that abandoned the match comes after everyone who
//! stayed, whatever its stand-in scored (they share last place with each other).
//!
//! [`Pool::Bots`]: every match with at least one **bot account** seated (a player that
//! became a program's account, `POST /api/account/bot`) is rated in its game's bot pool and
//! in no other, whoever else played: people who play a bot account are rated there too, so
//! the people's pools never see a program's result. The bot pool is Weng-Lin for any
//! number of seats, and there the house bots count as well, as fixed anchors that are
//! never updated nor listed ([`house_bot`]: easy μ 15, normal μ 25, hard μ 35, σ 2): a
//! bot account playing a house bot alone is rated. A match is rated there once it has two
//! participants (accounts and house bots together) and one account in one seat only.
//!
//! The leaderboard ranks by a conservative rating, [`conservative`] = μ − 3σ (in
//! Glicko-2, rating − 3 RD): someone who played little ranks low until the system is sure.

use skillratings::glicko2::{Glicko2Config, Glicko2Rating, glicko2};
use skillratings::weng_lin::{WengLinConfig, WengLinRating, weng_lin_multi_team};
use skillratings::{MultiTeamOutcome, Outcomes};

/// How many σ (RD) the conservative rating lies below μ.
pub const CONSERVATIVE_SIGMAS: f64 = 3.0;
/// Glicko-2's τ: how much volatility may change (Glickman suggests 0.3 to 1.2; 0.5 is
/// the value of his worked example and the crate's default).
pub const GLICKO2_TAU: f64 = 0.5;
/// Rated matches a player needs in a pool to appear on its leaderboard.
pub const MIN_RANKED_MATCHES: i64 = 3;
/// The version of the rating rules. When the stored ratings were computed under another
/// version, the store re-rates every finished match at start-up. 3: the rating history
/// (migration 0009) is kept too. 4: matches are replayed in the order they were rated
/// (`finish_seq`, migration 0013), so that ratings of matches finished before it in the
/// same millisecond agree with that order and with the history. 5: matches with a bot
/// account are rated in the bot pool only (migration 0016).
pub const VERSION: i64 = 5;

/// Which rating system and leaderboard a match belongs to, by how many people played.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pool {
    /// Two people: Glicko-2.
    Duel,
    /// Three or more people: Weng-Lin (Bradley–Terry).
    Multi,
    /// Any match with a bot account in it: Weng-Lin, house bots as fixed anchors.
    Bots,
}

/// The fixed rating of a house bot of `level` (`easy`, `normal`, `hard`) in the bot pool:
/// an anchor, never updated.
pub fn house_bot(level: &str) -> Rating {
    let mu = match level {
        "easy" => 15.0,
        "hard" => 35.0,
        _ => 25.0,
    };
    Rating {
        mu,
        sigma: 2.0,
        volatility: 0.0,
    }
}

impl Pool {
    /// The pool of a match with `people` people; `None` (unrated) below two.
    pub fn for_people(people: usize) -> Option<Pool> {
        match people {
            0 | 1 => None,
            2 => Some(Pool::Duel),
            _ => Some(Pool::Multi),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Pool::Duel => "duel",
            Pool::Multi => "multi",
            Pool::Bots => "bots",
        }
    }

    pub fn parse(s: &str) -> Option<Pool> {
        match s {
            "duel" => Some(Pool::Duel),
            "multi" => Some(Pool::Multi),
            "bots" => Some(Pool::Bots),
            _ => None,
        }
    }

    /// Where a player starts in this pool.
    pub fn initial(self) -> Rating {
        match self {
            Pool::Duel => {
                let r = Glicko2Rating::new();
                Rating {
                    mu: r.rating,
                    sigma: r.deviation,
                    volatility: r.volatility,
                }
            }
            Pool::Multi | Pool::Bots => {
                let r = WengLinRating::new();
                Rating {
                    mu: r.rating,
                    sigma: r.uncertainty,
                    // Weng-Lin has no volatility.
                    volatility: 0.0,
                }
            }
        }
    }
}

/// One player's skill estimate in one pool: μ (Glicko-2: the rating), σ (Glicko-2: RD)
/// and, in Glicko-2 only, the volatility.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rating {
    pub mu: f64,
    pub sigma: f64,
    pub volatility: f64,
}

/// The rating the leaderboard ranks by: μ − 3σ.
pub fn conservative(r: &Rating) -> f64 {
    r.mu - CONSERVATIVE_SIGMAS * r.sigma
}

/// One person's side of a finished match.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Entry {
    pub rating: Rating,
    pub won: bool,
    pub score: i64,
    /// They left the match (a stand-in finished it): last place.
    pub abandoned: bool,
}

/// The order of places, as a key (a better key, a better place): stayed, then won, then
/// score. Everyone who abandoned shares the last place.
fn place_key(abandoned: bool, won: bool, score: i64) -> (bool, bool, i64) {
    match abandoned {
        true => (false, false, 0),
        false => (true, won, score),
    }
}

/// Each entry's place, 1 = best; equal entries share a place (the next place skips, as in
/// "1, 1, 3").
pub fn places(entries: &[Entry]) -> Vec<usize> {
    let key = |e: &Entry| place_key(e.abandoned, e.won, e.score);
    entries
        .iter()
        .map(|a| 1 + entries.iter().filter(|b| key(b) > key(a)).count())
        .collect()
}

/// The seats in first place, in the order [`places`] ranks them, among those who stayed:
/// who won a match that someone abandoned (a seat that abandoned never wins). Per seat,
/// `won` (the game's verdict), `scores` and `abandoned`. Nobody, if nobody stayed.
pub fn first_of_those_who_stayed(won: &[bool], scores: &[i64], abandoned: &[bool]) -> Vec<usize> {
    let key = |s: usize| place_key(abandoned[s], won[s], scores[s]);
    let stayed = || (0..scores.len()).filter(|&s| !abandoned[s]);
    let best = stayed().map(key).max();
    stayed().filter(|&s| Some(key(s)) == best).collect()
}

/// The new ratings after one match, in the order of `entries`, all of `pool`. Fewer than
/// two entries: unchanged.
pub fn update(pool: Pool, entries: &[Entry]) -> Vec<Rating> {
    if entries.len() < 2 {
        return entries.iter().map(|e| e.rating).collect();
    }
    let places = places(entries);
    match pool {
        Pool::Duel => {
            assert_eq!(entries.len(), 2, "a duel has two people");
            let outcome = match places[0].cmp(&places[1]) {
                std::cmp::Ordering::Less => Outcomes::WIN,
                std::cmp::Ordering::Greater => Outcomes::LOSS,
                std::cmp::Ordering::Equal => Outcomes::DRAW,
            };
            let config = Glicko2Config {
                tau: GLICKO2_TAU,
                ..Glicko2Config::new()
            };
            let (a, b) = glicko2(
                &to_glicko(&entries[0].rating),
                &to_glicko(&entries[1].rating),
                &outcome,
                &config,
            );
            vec![from_glicko(a), from_glicko(b)]
        }
        Pool::Multi | Pool::Bots => {
            let teams: Vec<[WengLinRating; 1]> = entries
                .iter()
                .map(|e| {
                    [WengLinRating {
                        rating: e.rating.mu,
                        uncertainty: e.rating.sigma,
                    }]
                })
                .collect();
            let ranked: Vec<(&[WengLinRating], MultiTeamOutcome)> = teams
                .iter()
                .zip(&places)
                .map(|(t, &p)| (&t[..], MultiTeamOutcome::new(p)))
                .collect();
            weng_lin_multi_team(&ranked, &WengLinConfig::new())
                .into_iter()
                .map(|team| Rating {
                    mu: team[0].rating,
                    sigma: team[0].uncertainty,
                    volatility: 0.0,
                })
                .collect()
        }
    }
}

fn to_glicko(r: &Rating) -> Glicko2Rating {
    Glicko2Rating {
        rating: r.mu,
        deviation: r.sigma,
        volatility: r.volatility,
    }
}

fn from_glicko(r: Glicko2Rating) -> Rating {
    Rating {
        mu: r.rating,
        sigma: r.deviation,
        volatility: r.volatility,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skillratings::glicko2::glicko2_rating_period;

    fn e(rating: Rating, won: bool, score: i64) -> Entry {
        Entry {
            rating,
            won,
            score,
            abandoned: false,
        }
    }

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    /// Glickman's worked example ("Example of the Glicko-2 system", section "Example
    /// calculation"): a 1500 / 200 / 0.06 player, τ = 0.5, beats 1400/30, loses to 1550/100
    /// and to 1700/300 in one rating period and becomes 1464.06 / 151.52 / 0.05999.
    #[test]
    fn glicko2_reproduces_glickmans_worked_example() {
        let player = Glicko2Rating {
            rating: 1500.0,
            deviation: 200.0,
            volatility: 0.06,
        };
        let opponent = |rating, deviation| Glicko2Rating {
            rating,
            deviation,
            volatility: 0.06,
        };
        let config = Glicko2Config {
            tau: GLICKO2_TAU,
            ..Glicko2Config::new()
        };
        let after = glicko2_rating_period(
            &player,
            &[
                (opponent(1400.0, 30.0), Outcomes::WIN),
                (opponent(1550.0, 100.0), Outcomes::LOSS),
                (opponent(1700.0, 300.0), Outcomes::LOSS),
            ],
            &config,
        );
        assert!(close(after.rating, 1464.06, 0.05), "{after:?}");
        assert!(close(after.deviation, 151.52, 0.01), "{after:?}");
        assert!(close(after.volatility, 0.05999, 0.00001), "{after:?}");
    }

    /// A duel through [`update`]: newcomers move symmetrically (1662.3 / 1337.7, RD 290.3,
    /// the figures of the Glicko-2 formulas for 1500/350/0.06 against the same), a shared
    /// win is a draw, and an abandoner loses even with the better score.
    #[test]
    fn duel_between_newcomers() {
        let new = Pool::Duel.initial();
        assert_eq!(
            new,
            Rating {
                mu: 1500.0,
                sigma: 350.0,
                volatility: 0.06
            }
        );
        let r = update(Pool::Duel, &[e(new, true, 10), e(new, false, 3)]);
        assert!(close(r[0].mu, 1662.31, 0.01), "{r:?}");
        assert!(close(r[1].mu, 1337.69, 0.01), "{r:?}");
        assert!(close(r[0].sigma, 290.32, 0.01) && close(r[1].sigma, 290.32, 0.01));
        let draw = update(Pool::Duel, &[e(new, true, 10), e(new, true, 10)]);
        assert!(close(draw[0].mu, 1500.0, 1e-9) && close(draw[1].mu, 1500.0, 1e-9));
        let gone = Entry {
            abandoned: true,
            ..e(new, true, 99)
        };
        let r = update(Pool::Duel, &[gone, e(new, false, 1)]);
        assert!(r[0].mu < 1500.0 && r[1].mu > 1500.0, "{r:?}");
    }

    /// The reference implementation of Weng-Lin, openskill.py 6.2.0, model
    /// `BradleyTerryFull(tau=0)` (skillratings adds no dynamics factor τ, so openskill's is
    /// set to 0), `rate([[a], [b], [c], [d]], ranks=[2, 1, 3, 4])` with a = 25 / 25/3,
    /// b = 30 / 5, c = 20 / 7, d = 25 / 25/3; and `rate` of three newcomers with
    /// `ranks=[1, 2, 2]` (a tie). Its printed results, to 1e-6.
    #[test]
    fn weng_lin_reproduces_openskill_bradley_terry_full() {
        let r = |mu, sigma| Rating {
            mu,
            sigma,
            volatility: 0.0,
        };
        let new = Pool::Multi.initial();
        assert_eq!((new.mu, new.sigma), (25.0, 25.0 / 3.0));
        // Places 2, 1, 3, 4 through wins and scores: b won; a, c, d by score.
        let after = update(
            Pool::Multi,
            &[
                e(new, false, 50),
                e(r(30.0, 5.0), true, 10),
                e(r(20.0, 7.0), false, 40),
                e(new, false, 30),
            ],
        );
        let expected = [
            (27.48793578254313, 7.310237187127031),
            (32.38779800578272, 4.840801687823766),
            (19.48703879724357, 6.463228920626947),
            (16.606277810742434, 7.310237187127031),
        ];
        for (got, want) in after.iter().zip(expected) {
            assert!(close(got.mu, want.0, 1e-6), "{after:?}");
            assert!(close(got.sigma, want.1, 1e-6), "{after:?}");
        }
        let tie = update(
            Pool::Multi,
            &[e(new, true, 1), e(new, false, 0), e(new, false, 0)],
        );
        let expected = [
            (30.2704627669473, 7.788474807872566),
            (22.36476861652635, 7.788474807872566),
            (22.36476861652635, 7.788474807872566),
        ];
        for (got, want) in tie.iter().zip(expected) {
            assert!(close(got.mu, want.0, 1e-6), "{tie:?}");
            assert!(close(got.sigma, want.1, 1e-6), "{tie:?}");
        }
    }

    #[test]
    fn places_rank_winners_then_scores_then_abandoners() {
        let new = Pool::Multi.initial();
        let gone = |score| Entry {
            abandoned: true,
            ..e(new, true, score)
        };
        let p = places(&[
            e(new, false, 50),
            e(new, true, 10),
            gone(500),
            e(new, false, 50),
            e(new, true, 10),
            gone(1),
        ]);
        assert_eq!(p, vec![3, 1, 5, 3, 1, 5]);
    }

    /// The winners of a match someone abandoned are the first places among those who
    /// stayed, in the same order as `places`.
    #[test]
    fn first_of_those_who_stayed_follows_the_places() {
        let first = first_of_those_who_stayed;
        // The one who left won at the cards: the one who stayed is first.
        assert_eq!(first(&[false, true], &[3, 13], &[false, true]), vec![0]);
        // A draw: the same.
        assert_eq!(first(&[false, false], &[2, 2], &[false, true]), vec![0]);
        // Among those who stayed, the game's winner, then the better score.
        assert_eq!(
            first(&[false, true, false], &[9, 1, 5], &[false, false, true]),
            vec![1]
        );
        assert_eq!(
            first(&[false, false, true], &[4, 7, 9], &[false, false, true]),
            vec![1]
        );
        assert!(first(&[true, false], &[2, 1], &[true, true]).is_empty());
    }

    #[test]
    fn pools_by_people_and_conservative_rating() {
        assert_eq!(Pool::for_people(1), None);
        assert_eq!(Pool::for_people(2), Some(Pool::Duel));
        assert_eq!(Pool::for_people(5), Some(Pool::Multi));
        assert_eq!(Pool::parse("multi"), Some(Pool::Multi));
        assert_eq!(Pool::parse("Duel"), None);
        assert_eq!(Pool::parse("bots"), Some(Pool::Bots));
        assert_eq!(Pool::Bots.initial(), Pool::Multi.initial());
        // A bot account beating the hard anchor gains; the anchor is only an input.
        let r = update(
            Pool::Bots,
            &[
                e(Pool::Bots.initial(), true, 8),
                e(house_bot("hard"), false, 3),
            ],
        );
        assert!(r[0].mu > Pool::Bots.initial().mu);
        assert_eq!(conservative(&Pool::Duel.initial()), 450.0);
        assert!(close(conservative(&Pool::Multi.initial()), 0.0, 1e-9));
        let one = [e(Pool::Duel.initial(), true, 1)];
        assert_eq!(update(Pool::Duel, &one), vec![Pool::Duel.initial()]);
    }
}
