-- Accounts receivable: what customers owe on sent invoices, one system account per invoice (entity_id: the
-- invoice id), posted by the invoicing service. Forward-only; applied with search_path = ledger.
alter table accounts drop constraint accounts_account_type_check;
alter table accounts add constraint accounts_account_type_check check (account_type in (
  'platform_cash', 'platform_revenue', 'processing_fees', 'sales_tax_payable', 'payouts_in_transit',
  'refunds_payable', 'opening_balance_equity', 'income', 'expense', 'accounts_payable', 'creator_receivable',
  'sandbox_funding', 'creator_earnings', 'consumer_credit', 'accounts_receivable'));
