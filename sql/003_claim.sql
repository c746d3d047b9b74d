-- 003_claim.sql - index for the executor's claim (src/store/exec.c): the
-- tenants with waiting work (a loose index scan on the leading column) and
-- each tenant's ready work in the order it is claimed.
CREATE INDEX triggers_tenant_ready ON triggers (tenant, (coalesce(next_attempt_at, due_at)))
	WHERE state IN ('pending', 'retry_wait', 'unknown');
