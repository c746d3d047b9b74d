-- triggers_state_edges: G7, every change of a trigger's state (or of its
-- fence) is an edge of the state machine.  One statement-level check over
-- the transition tables (palisade_trigger_edges_check), not a PL/pgSQL
-- call per row: a 256-row claim update took 14-17 ms with a row trigger
-- and 8-9 ms with this one (no guard at all: 8-10 ms).
CREATE OR REPLACE TRIGGER triggers_state_edges AFTER UPDATE ON triggers REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION palisade_trigger_edges_check();
