-- 016: a stamp of each Sieve script (mailstore.SieveScript.Version), new
-- from a sequence at every insert and update of its row (a trigger, so
-- that every writer, older binaries too, gives one): the recipient's
-- look-up reads the active script's stamp, and delivery keeps a parsed
-- script while the stamp is the same instead of reading it again.
--
-- Older binaries keep working (min_compatible stays 1): they never read
-- the column, and the trigger fills it for them. IF NOT EXISTS, OR
-- REPLACE: the file may be renumbered when merged.
CREATE SEQUENCE IF NOT EXISTS sieve_scripts_version;
ALTER TABLE sieve_scripts ADD COLUMN IF NOT EXISTS version bigint NOT NULL DEFAULT nextval('sieve_scripts_version');
CREATE OR REPLACE FUNCTION sieve_scripts_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.version := nextval('sieve_scripts_version');
	RETURN NEW;
END
$$;
DROP TRIGGER IF EXISTS sieve_scripts_stamp ON sieve_scripts;
CREATE TRIGGER sieve_scripts_stamp BEFORE INSERT OR UPDATE ON sieve_scripts
	FOR EACH ROW EXECUTE FUNCTION sieve_scripts_stamp();
