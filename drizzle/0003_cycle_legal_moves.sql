-- The legal moves of a cycle, enforced by the database: the same table as LEGAL_MOVES in
-- src/db/cycle-transitions.ts (test/db/cycle-transitions.test.ts holds the two equal). A move outside it is
-- refused with SQLSTATE 23514 (check_violation), whatever statement attempts it.
CREATE FUNCTION cycles_legal_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.state IS DISTINCT FROM OLD.state AND (OLD.state, NEW.state) NOT IN (
      ('claimed', 'quoted'),
      ('claimed', 'submitting'),
      ('claimed', 'skipped'),
      ('claimed', 'failed'),
      ('quoted', 'submitting'),
      ('quoted', 'skipped'),
      ('quoted', 'failed'),
      ('quoted', 'dry_run'),
      ('submitting', 'placed'),
      ('submitting', 'failed'),
      ('submitting', 'unsure'),
      ('submitting', 'quoted'),
      ('unsure', 'placed'),
      ('unsure', 'not_placed')
  ) THEN
    RAISE EXCEPTION 'illegal cycle move % -> % (cycle %)', OLD.state, NEW.state, OLD.id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER cycles_legal_move BEFORE UPDATE OF state ON cycles
  FOR EACH ROW EXECUTE FUNCTION cycles_legal_move();
