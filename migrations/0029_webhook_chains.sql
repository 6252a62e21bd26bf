-- Webhook subscriptions may name the chains they want; null: every chain.
ALTER TABLE webhook_subscriptions ADD COLUMN chain_ids integer[];
