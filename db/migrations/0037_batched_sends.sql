-- The send worker reserves the monthly quota for a whole batch of template sends in one call: as many units as are
-- wanted and still free (0 to p_wanted), never more than the plan's limit. The month's row is locked for the rest of
-- the caller's transaction, so concurrent batches take units one after the other and the sum never goes over.
CREATE OR REPLACE FUNCTION herold_reserve_units(p_account uuid, p_month text, p_wanted int)
RETURNS int
LANGUAGE plpgsql
AS $$
DECLARE
  v_limit int;
  v_used int;
  v_granted int;
BEGIN
  IF p_wanted < 1 THEN
    RETURN 0;
  END IF;
  SELECT p.messages_per_month INTO v_limit FROM accounts a JOIN plans p ON p.name = a.plan WHERE a.id = p_account;
  IF v_limit IS NULL OR v_limit < 1 THEN
    RETURN 0;
  END IF;
  INSERT INTO message_quota (account_id, month, used) VALUES (p_account, p_month, 0)
    ON CONFLICT (account_id, month) DO NOTHING;
  SELECT used INTO v_used FROM message_quota WHERE account_id = p_account AND month = p_month FOR UPDATE;
  v_granted := GREATEST(0, LEAST(p_wanted, v_limit - v_used));
  IF v_granted > 0 THEN
    UPDATE message_quota SET used = used + v_granted WHERE account_id = p_account AND month = p_month;
  END IF;
  RETURN v_granted;
END
$$;
