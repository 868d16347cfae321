-- People are named case-insensitively (issue 33.3): `Ana` and `ana` are one person, so two approvals by them
-- are one. Existing names are folded to lower case; names that differ only in case are refused, listed, so
-- that an administrator renames or disables one of each before migrating (nothing is applied until then).
DO $$
DECLARE
  clashes text;
BEGIN
  SELECT string_agg(names, '; ') INTO clashes FROM (
    SELECT string_agg("name", ', ' ORDER BY "name") AS names FROM "users" GROUP BY lower("name") HAVING count(*) > 1
  ) AS clashing;
  IF clashes IS NOT NULL THEN
    RAISE EXCEPTION 'people whose names differ only in case: %; keep one name of each (the rest renamed in the users table) and migrate again', clashes
      USING ERRCODE = 'unique_violation';
  END IF;
END
$$;--> statement-breakpoint
UPDATE "users" SET "name" = lower("name") WHERE "name" <> lower("name");--> statement-breakpoint
ALTER TABLE "users" ADD CONSTRAINT "users_name_folded_check" CHECK ("users"."name" = lower("users"."name"));--> statement-breakpoint
-- An approved cycle whose approvals stop counting (a person disabled before it was bought) waits for people
-- again (src/db/cycle-transitions.ts LEGAL_MOVES; the test reads the latest definition of this function).
CREATE OR REPLACE FUNCTION cycles_legal_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.state IS DISTINCT FROM OLD.state AND (OLD.state, NEW.state) NOT IN (
      ('claimed', 'quoted'),
      ('claimed', 'submitting'),
      ('claimed', 'skipped'),
      ('claimed', 'failed'),
      ('claimed', 'awaiting_approval'),
      ('quoted', 'submitting'),
      ('quoted', 'skipped'),
      ('quoted', 'failed'),
      ('quoted', 'dry_run'),
      ('quoted', 'awaiting_approval'),
      ('submitting', 'placed'),
      ('submitting', 'failed'),
      ('submitting', 'unsure'),
      ('submitting', 'quoted'),
      ('unsure', 'placed'),
      ('unsure', 'not_placed'),
      ('awaiting_approval', 'approved'),
      ('awaiting_approval', 'rejected'),
      ('awaiting_approval', 'approval_expired'),
      ('approved', 'claimed'),
      ('approved', 'approval_expired'),
      ('approved', 'awaiting_approval')
  ) THEN
    RAISE EXCEPTION 'illegal cycle move % -> % (cycle %)', OLD.state, NEW.state, OLD.id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END
$$;
