-- A table keeps only the latest 50 chat lines of each kind (players', spectators'):
-- `store::CHAT_KEPT`, what a page is sent. Each new line forgets the oldest beyond from now
-- on; this forgets those stored before, which no page could show.
DELETE FROM chat_lines WHERE (table_id, seq) IN (
    SELECT table_id, seq FROM (
        SELECT table_id, seq,
               ROW_NUMBER() OVER (PARTITION BY table_id, spectator ORDER BY seq DESC) AS n
        FROM chat_lines
    ) AS ranked
    WHERE n > 50
);
