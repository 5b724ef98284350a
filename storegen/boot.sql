-- Boot-time rows Kandev's own boot chain writes into the small settings tables
-- (executors, executor profiles, the local environment, the default user,
-- editors, notification migrations, telemetry contract activations), copied
-- from testdata/kandev/fresh-activated.db (written by Kandev's own code at
-- Kandev commit cd9fa0e6, see testdata/kandev/README.md) with every wall-clock
-- timestamp replaced by the @BOOT@ placeholder, which storegen substitutes
-- with the store's boot instant (mattn timestamp text).
--
-- Not copied: the built-in catalogue rows of custom_prompts (6),
-- utility_agents (8) and workflow_templates (9). They are ~80 KB of static
-- prompt text that no analytics reader uses, and they would push the
-- checked-in demo store past 2 MB; those tables exist but stay empty.
--
-- One statement per row; statements are separated by the "-- @row" marker.

-- @row executors
INSERT INTO executors (id, name, type, status, is_system, resumable, config, created_at, updated_at, deleted_at) VALUES ('exec-local', 'Local', 'local', 'active', 1, 1, '{}', '@BOOT@', '@BOOT@', NULL);

-- @row executors
INSERT INTO executors (id, name, type, status, is_system, resumable, config, created_at, updated_at, deleted_at) VALUES ('exec-worktree', 'Worktree', 'worktree', 'active', 1, 1, '{}', '@BOOT@', '@BOOT@', NULL);

-- @row executors
INSERT INTO executors (id, name, type, status, is_system, resumable, config, created_at, updated_at, deleted_at) VALUES ('exec-local-docker', 'Local Docker', 'local_docker', 'active', 0, 1, '{"docker_host":"unix:///var/run/docker.sock"}', '@BOOT@', '@BOOT@', NULL);

-- @row executors
INSERT INTO executors (id, name, type, status, is_system, resumable, config, created_at, updated_at, deleted_at) VALUES ('exec-sprites', 'Sprites.dev', 'sprites', 'disabled', 0, 1, '{}', '@BOOT@', '@BOOT@', NULL);

-- @row executor_profiles
INSERT INTO executor_profiles (id, executor_id, name, mcp_policy, config, prepare_script, cleanup_script, env_vars, created_at, updated_at) VALUES ('4cfcf32a-9634-4fc4-84be-95806c528064', 'exec-local', 'Local', '', '{}', '', '', '[]', '@BOOT@', '@BOOT@');

-- @row executor_profiles
INSERT INTO executor_profiles (id, executor_id, name, mcp_policy, config, prepare_script, cleanup_script, env_vars, created_at, updated_at) VALUES ('e5d2888e-cf07-444a-921b-1544cdf2b9ac', 'exec-worktree', 'Worktree', '', '{}', '', '', '[]', '@BOOT@', '@BOOT@');

-- @row environments
INSERT INTO environments (id, name, kind, is_system, worktree_root, image_tag, dockerfile, build_config, created_at, updated_at, deleted_at) VALUES ('env-local', 'Local', 'local_pc', 1, '~/kandev', '', '', '{}', '@BOOT@', '@BOOT@', NULL);

-- @row notification_migrations
INSERT INTO notification_migrations (name, completed_at) VALUES ('add_system_update_available_to_local_and_system_v1', '@BOOT@');

-- @row users
INSERT INTO users (id, email, display_name, role, status, settings, settings_revision, created_at, updated_at) VALUES ('default-user', 'default@kandev.local', '', 'admin', 'active', '{}', 0, '@BOOT@', '@BOOT@');

-- @row editors
INSERT INTO editors (id, type, name, kind, command, scheme, config, installed, enabled, created_at, updated_at) VALUES ('0e8c0abd-4fec-4856-950a-c8068b5a118f', 'vscode_web', 'VS Code (Embedded)', 'internal_vscode', '', '', '', 1, 1, '@BOOT@', '@BOOT@');

-- @row editors
INSERT INTO editors (id, type, name, kind, command, scheme, config, installed, enabled, created_at, updated_at) VALUES ('e097165a-4d70-4af7-9430-a7bc7cc1b325', 'vscode', 'VS Code', 'built_in', 'code', 'vscode', '', 0, 1, '@BOOT@', '@BOOT@');

-- @row editors
INSERT INTO editors (id, type, name, kind, command, scheme, config, installed, enabled, created_at, updated_at) VALUES ('a9948875-bab1-4864-911d-e020e6af4e04', 'zed', 'Zed', 'built_in', 'zed', 'zed', '', 0, 1, '@BOOT@', '@BOOT@');

-- @row editors
INSERT INTO editors (id, type, name, kind, command, scheme, config, installed, enabled, created_at, updated_at) VALUES ('e8e78592-1f67-4811-848d-ac9d1e3df881', 'cursor', 'Cursor', 'built_in', 'cursor', 'cursor', '', 0, 1, '@BOOT@', '@BOOT@');

-- @row editors
INSERT INTO editors (id, type, name, kind, command, scheme, config, installed, enabled, created_at, updated_at) VALUES ('22441bdd-dbeb-479f-9fd4-e2375d0669d8', 'windsurf', 'Windsurf', 'built_in', 'windsurf', 'windsurf', '', 0, 1, '@BOOT@', '@BOOT@');

-- @row editors
INSERT INTO editors (id, type, name, kind, command, scheme, config, installed, enabled, created_at, updated_at) VALUES ('523136ab-c2f7-4c51-ad55-338757823f37', 'intellij', 'IntelliJ IDEA', 'built_in', 'idea', 'idea', '', 0, 1, '@BOOT@', '@BOOT@');

-- @row editors
INSERT INTO editors (id, type, name, kind, command, scheme, config, installed, enabled, created_at, updated_at) VALUES ('565dd40a-9169-4f37-977f-5b102a6da418', 'golang', 'GoLand', 'built_in', 'goland', 'goland', '', 0, 1, '@BOOT@', '@BOOT@');

-- @row editors
INSERT INTO editors (id, type, name, kind, command, scheme, config, installed, enabled, created_at, updated_at) VALUES ('dbc612c5-f1fc-4544-99ae-771735781ede', 'phpstorm', 'PhpStorm', 'built_in', 'phpstorm', 'phpstorm', '', 0, 1, '@BOOT@', '@BOOT@');

-- @row telemetry_activations
INSERT INTO telemetry_activations (contract_key, contract_version, activated_at) VALUES ('turn.workflow_step_id_at_start', 1, '@BOOT@');

-- @row telemetry_activations
INSERT INTO telemetry_activations (contract_key, contract_version, activated_at) VALUES ('task_step_transitions', 1, '@BOOT@');
