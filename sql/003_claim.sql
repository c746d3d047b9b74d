-- 003_claim.sql - index for the executor's per-tenant claim candidates
-- (src/store/exec.c): the oldest claimable triggers of each tenant.
CREATE INDEX triggers_tenant_ready ON triggers (tenant, due_at)
	WHERE state IN ('pending', 'retry_wait', 'unknown');
