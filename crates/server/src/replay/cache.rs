//! The replays built lately, as sent, and who may see them.

/// The replays built lately, as the JSON sent: a finished match's replay never changes,
/// and building a long one costs a few hundred milliseconds of CPU (a walk held up play
/// for everyone with five anonymous requests a second). Bounded by bytes; the oldest built
/// goes first.
pub struct Cache {
    inner: std::sync::Mutex<CacheInner>,
    budget: usize,
}

/// Who may see a cached replay: what the private-table rule reads of the stored table,
/// which a finished match no longer changes. A cache hit is checked against it without
/// loading the table (its whole action log) again.
#[derive(Clone, Debug)]
pub struct Access {
    pub private: bool,
    pub invite_code: Option<String>,
    /// The people seated at it: they see it without the invite code.
    pub players: Vec<uuid::Uuid>,
}

impl Access {
    pub fn of(st: &store::StoredTable) -> Access {
        Access {
            private: st.record.private,
            invite_code: st.record.invite_code.clone(),
            players: st
                .seats
                .iter()
                .filter_map(|o| match o {
                    store::Occupant::Player { id, .. } => Some(*id),
                    _ => None,
                })
                .collect(),
        }
    }
}

/// A cached replay: its JSON and who may see it.
pub type Cached = (axum::body::Bytes, std::sync::Arc<Access>);

#[derive(Default)]
struct CacheInner {
    by_table: std::collections::HashMap<uuid::Uuid, Cached>,
    order: std::collections::VecDeque<uuid::Uuid>,
    bytes: usize,
}

impl Cache {
    /// A cache that holds at most `budget` bytes of replays.
    pub fn new(budget: usize) -> Self {
        Cache {
            inner: std::sync::Mutex::default(),
            budget,
        }
    }

    pub fn get(&self, table: uuid::Uuid) -> Option<Cached> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .by_table
            .get(&table)
            .cloned()
    }

    /// Keeps `json` as `table`'s replay, seen by whom `access` says; one larger than the
    /// whole budget is not kept.
    pub fn put(&self, table: uuid::Uuid, json: axum::body::Bytes, access: Access) {
        if json.len() > self.budget {
            return;
        }
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let len = json.len();
        if let Some((old, _)) = c
            .by_table
            .insert(table, (json, std::sync::Arc::new(access)))
        {
            c.bytes -= old.len();
        } else {
            c.order.push_back(table);
        }
        c.bytes += len;
        while c.bytes > self.budget {
            let Some(oldest) = c.order.pop_front() else {
                break;
            };
            if let Some((gone, _)) = c.by_table.remove(&oldest) {
                c.bytes -= gone.len();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_keeps_to_its_budget_oldest_out_first() {
        let c = Cache::new(10);
        let (a, b, d) = (
            uuid::Uuid::new_v4(),
            uuid::Uuid::new_v4(),
            uuid::Uuid::new_v4(),
        );
        let open = || Access {
            private: false,
            invite_code: None,
            players: vec![],
        };
        c.put(a, axum::body::Bytes::from_static(b"aaaa"), open());
        c.put(b, axum::body::Bytes::from_static(b"bbbb"), open());
        assert!(c.get(a).is_some() && c.get(b).is_some());
        c.put(d, axum::body::Bytes::from_static(b"dddd"), open());
        assert!(c.get(a).is_none(), "the oldest went");
        assert_eq!(c.get(d).unwrap().0.as_ref(), &b"dddd"[..]);
        c.put(a, axum::body::Bytes::from(vec![0; 11]), open());
        assert!(c.get(a).is_none(), "larger than the budget: not kept");
    }
}
