-- 029_fire_fillfactor.sql - a fire's row versions stay on their page:
-- triggers partitions get fillfactor 50 (80 since 001), attempts
-- partitions 35 (70 since 015).
--
-- compatible_from: 1
--
-- Why (docs/performance.md, "What a fire costs"; bytes and WAL per fire
-- measured with BENCH_QUICK=1 BENCH_ONLY=exec, each setting on its own
-- with BENCH_EXEC_SQL):
--
-- * attempts, 35: the claim inserts a narrow attempt row (~90 B: trigger,
--   token, node, claimed_at) and the result rewrites it whole with its
--   outcome, status, duration and key (~150 B).  A result batch ends
--   every attempt of a page in one statement, so no pruning frees room
--   between them: the page must hold both versions of all its rows at
--   once, which fillfactor 70 allowed for one row in three.  The other
--   two left their page and wrote a new entry into each of the three
--   indexes of attempts.  At 35 (90 / (90 + 150) = 37 %) every such
--   update is HOT: 10,000 of 10,000 in the run, 3,274 before; at 45,
--   7,354.  1,176 -> 1,085 B and 2,238 -> 1,997 B of WAL per fire.
-- * triggers, 50: a state change is never HOT (state is in the
--   predicates of the partial indexes), but a new version written on the
--   old one's page is still cheaper: its WAL record carries only what
--   changed (PostgreSQL's prefix and suffix compression of a same-page
--   update), and the page's dead versions are pruned when it is next
--   read, so the result's version takes the room the planned version
--   left.  At 80 the claim's versions mostly went to other pages; at 50
--   the planned and the claimed version of every row fit together
--   (~170 + ~190 B).  Triggers heap 516-534 -> 412-434 B per fire (45:
--   419, 60: 449), WAL of the heap 968 -> 822 B per fire.
--
-- Existing partitions keep their pages and fill new ones at the new
-- setting; new partitions get it from palisade_partition_create()
-- (sql/functions/).  ALTER TABLE ... SET takes SHARE UPDATE EXCLUSIVE on
-- each partition: no claim or commit waits for it.  Expand only: no
-- column, argument or result changes.
DO $do$
DECLARE r record;
BEGIN
	FOR r IN SELECT triggers_part, attempts_part FROM palisade_partitions LOOP
		EXECUTE format('ALTER TABLE %I SET (fillfactor = 50)', r.triggers_part);
		EXECUTE format('ALTER TABLE %I SET (fillfactor = 35)', r.attempts_part);
	END LOOP;
END
$do$;
ALTER TABLE triggers_pdefault SET (fillfactor = 50);
ALTER TABLE attempts_pdefault SET (fillfactor = 35);
