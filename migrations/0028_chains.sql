-- Several chains in one deployment: each chain's name from the config file (analytics.chains shows it).
ALTER TABLE chain_state ADD COLUMN name text;
