--[[ job_submit.lua: sealrun's admission gate for Slurm (JobSubmitPlugins=lua; this file goes next
to slurm.conf). A batch job is accepted only when its script is exactly one admitted `sealrun run`:

    #!/bin/sh
    #SBATCH ...                      (comments and blank lines are fine)
    exec /usr/bin/sealrun run ADMISSION --sha256 HEX [--id ID] [--state-dir DIR] ...

with a sealrun executable the site names (a name looked up on the user's PATH could be any program
called sealrun), run with `exec` (so that sealrun itself receives scancel's SIGTERM), and with
ADMISSION's SHA-256 equal to HEX, computed here at submission (the file is read as the submitting
user where slurmctld runs as root, bounded to 1 MiB and 10 s). Anything else is refused with a
message that says why. An accepted job is made non-requeueable (a requeued job would repeat its
--id, which sealrun refuses).

This is an early refusal for the user's benefit, not the enforcement: sealrun verifies the
admission and every pin again, byte for byte, before it runs anything (exit 3 otherwise), so a file
changed between submission and start is still caught. Jobs without a script (srun, salloc) carry
no command at submission in Slurm 22.05; their steps are gated when they start by the sealrun SPANK
plugin (spank_sealrun.so), which must be installed with this file.

Settings: sealrun_gate.conf next to this file, one `key=value` per line ('#' comments):
  sealrun=/usr/bin/sealrun     an allowed sealrun executable (repeatable; default /usr/bin/sealrun)
  report_only=refuse|allow     whether `--mode report-only` runs are accepted (default refuse)
  exempt_uid=N                 a submitting uid the gate lets through (repeatable; default none)
]]

local MAX_SCRIPT = 64 * 1024
local MAX_ADMISSION = 1024 * 1024
local HASH_TIMEOUT_S = 10

local config = { sealrun = {}, allow_report_only = false, exempt = {} }

local function here()
  local src = debug.getinfo(1, "S").source
  if src:sub(1, 1) == "@" then return src:sub(2):match("^(.*)/[^/]*$") end
  return nil
end

local function load_config()
  local dir = here()
  local f = dir and io.open(dir .. "/sealrun_gate.conf", "r")
  if f then
    for line in f:lines() do
      line = line:gsub("#.*$", ""):match("^%s*(.-)%s*$")
      local k, v = line:match("^([%w_]+)%s*=%s*(%S+)$")
      if k == "sealrun" and v:sub(1, 1) == "/" then
        table.insert(config.sealrun, v)
      elseif k == "report_only" and (v == "allow" or v == "refuse") then
        config.allow_report_only = (v == "allow")
      elseif k == "exempt_uid" and tonumber(v) then
        config.exempt[tonumber(v)] = true
      elseif line ~= "" then
        slurm.log_error("sealrun gate: ignoring the line '%s' of %s/sealrun_gate.conf", line, dir)
      end
    end
    f:close()
  end
  if #config.sealrun == 0 then config.sealrun = { "/usr/bin/sealrun" } end
end

-- One shell word for /bin/sh: single-quoted, a ' written as '\''.
local function shquote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local function run_read(cmd)
  local p = io.popen(cmd, "r")
  if not p then return nil end
  local out = p:read("*a")
  p:close()
  return out
end

local am_root = nil
local function slurmctld_is_root()
  if am_root == nil then am_root = (run_read("id -u") or ""):match("^0%s*$") ~= nil end
  return am_root
end

-- The SHA-256 of a regular file (not a symlink, at most MAX_ADMISSION bytes), read as uid:gid
-- when slurmctld runs as root, so that the gate can never be used to learn about a file the user
-- could not read. Returns the hex digest, or nil and a reason.
local function sha256_of(path, uid, gid)
  local drop = ""
  if slurmctld_is_root() then
    drop = string.format("setpriv --reuid=%d --regid=%d --clear-groups ", uid, gid)
  end
  local script = 'f=$1; if [ -L "$f" ] || [ ! -f "$f" ]; then echo notfile; exit 0; fi; ' ..
      'if [ ! -r "$f" ]; then echo unreadable; exit 0; fi; ' ..
      'n=$(stat -c %s -- "$f") || exit 0; if [ "$n" -gt ' .. MAX_ADMISSION ..
      ' ]; then echo toolarge; exit 0; fi; head -c ' .. (MAX_ADMISSION + 1) .. ' -- "$f" | sha256sum'
  local cmd = string.format("exec %stimeout -s KILL %d sh -c %s sh %s 2>/dev/null", drop,
    HASH_TIMEOUT_S, shquote(script), shquote(path))
  local out = run_read(cmd) or ""
  local hex = out:match("^(%x+)%s")
  if hex and #hex == 64 then return hex end
  if out:match("^notfile") then return nil, "is not a regular file (or is a symbolic link)" end
  if out:match("^unreadable") then return nil, "cannot be read by the submitting user" end
  if out:match("^toolarge") then return nil, "is larger than " .. MAX_ADMISSION .. " bytes" end
  return nil, "could not be hashed (missing, or not read within " .. HASH_TIMEOUT_S .. " s)"
end

local function allowed_sealrun(path)
  for _, p in ipairs(config.sealrun) do
    if p == path then return true end
  end
  return false
end

local SHELLS = { ["/bin/sh"] = true, ["/bin/bash"] = true, ["/usr/bin/sh"] = true,
  ["/usr/bin/bash"] = true }

-- The command words of the script's one command line, or nil and a reason.
local function command_words(script)
  if #script > MAX_SCRIPT then return nil, "the batch script is larger than " .. MAX_SCRIPT .. " bytes" end
  local command = nil
  local n = 0
  for line in (script .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    line = line:gsub("\r$", "")
    if n == 1 and line:sub(1, 2) == "#!" then
      -- The interpreter runs the script: only a plain shell reads the command line as we do.
      local interp = line:match("^#!%s*(%S+)%s*$")
      if not interp or not SHELLS[interp] then
        return nil, "the script's interpreter must be /bin/sh or /bin/bash, not '" .. line .. "'"
      end
    elseif line:match("^%s*$") or line:match("^%s*#") then
      -- blank, a comment or an #SBATCH directive
    elseif command then
      return nil, "the script must run one command, `sealrun run ...`, and nothing else " ..
          "(line " .. n .. ": '" .. line .. "')"
    else
      command = line
    end
  end
  if not command then return nil, "the script runs no command" end
  -- Plain words only: no quoting, expansion, redirection or second command, so that the words
  -- read here are exactly the ones the shell will run.
  local words = {}
  for w in command:gmatch("%S+") do
    if not w:match("^[%w%._/=:,+@%-]+$") then
      return nil, "the command may hold only plain words (letters, digits and . _ / = : , + @ -); " ..
          "'" .. w .. "' is not one"
    end
    table.insert(words, w)
  end
  local exec = words[1] == "exec"
  if exec then table.remove(words, 1) end
  return words, nil, exec
end

-- Returns nil when the script is an admitted sealrun run, else the reason.
local function refusal(job_desc, uid, gid)
  local words, why, exec = command_words(job_desc.script)
  if not words then return why end
  local sealrun = config.sealrun[1]
  if not allowed_sealrun(words[1] or "") then
    return "this cluster runs only admitted sealrun runs: the script must run `exec " .. sealrun ..
        " run ADMISSION --sha256 HEX ...` (with that full path), not '" .. (words[1] or "") .. "'"
  end
  if words[2] ~= "run" or not words[3] or words[3]:sub(1, 1) == "-" then
    return "the script must run `" .. words[1] .. " run ADMISSION --sha256 HEX ...` " ..
        "(the admission right after `run`)"
  end
  -- `exec`: sealrun must be the batch step's task itself. Otherwise scancel's SIGTERM ends the
  -- shell at once, Slurm counts the step as finished and SIGKILLs the rest of it at once -- sealrun
  -- included, before it has stopped its job and written the receipt.
  if not exec then
    return "the command must start with `exec` (`exec " .. words[1] .. " run ...`): then " ..
        "scancel's SIGTERM reaches sealrun, which stops its job and writes the receipt before " ..
        "the step ends"
  end
  local admission = words[3]
  local sha = nil
  local i = 4
  while i <= #words do
    local w = words[i]
    local value = nil
    if w == "--" then break end
    if w == "--sha256" then
      value = words[i + 1]
      if not value then return "--sha256 needs a value" end
      i = i + 1
    elseif w:sub(1, 9) == "--sha256=" then
      value = w:sub(10)
    elseif (w == "--mode" and words[i + 1] == "report-only") or w == "--mode=report-only" then
      if not config.allow_report_only then
        return "this cluster refuses `--mode report-only`: runs here must be enforced"
      end
    end
    if value then
      if sha then return "--sha256 is given more than once" end
      sha = value
    end
    i = i + 1
  end
  if not sha then return "the sealrun run has no --sha256: give the admission's SHA-256" end
  if not sha:match("^[0-9a-f]+$") or #sha ~= 64 then
    return "--sha256 '" .. sha .. "' is not 64 lower-case hex digits"
  end
  local path = admission
  if path:sub(1, 1) ~= "/" then
    if not job_desc.work_dir then return "the admission path is relative and the job has no working directory" end
    path = job_desc.work_dir .. "/" .. path
  end
  local observed, bad = sha256_of(path, uid, gid)
  if not observed then return "the admission '" .. path .. "' " .. bad end
  if observed ~= sha then
    return "the admission '" .. path .. "' does not match --sha256 " .. sha ..
        " (it has changed since it was frozen, or the hash is wrong; `sealrun fingerprint file " ..
        path .. "` prints its SHA-256)"
  end
  return nil
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  if config.exempt[submit_uid] then return slurm.SUCCESS end
  -- srun and salloc: no command at submission; their steps meet the SPANK gate when they start.
  if job_desc.script == nil then return slurm.SUCCESS end
  local gid = job_desc.group_id
  if gid == nil or gid == slurm.NO_VAL then gid = submit_uid end
  local why = refusal(job_desc, submit_uid, gid)
  if why then
    slurm.log_info("sealrun gate: refused a job of uid %d: %s", submit_uid, why)
    slurm.log_user("sealrun gate: %s", why)
    return slurm.ERROR
  end
  -- Never requeued: a requeued job would run the same `--id` again, which sealrun refuses (a run
  -- never reuses an id); after a node failure the job ends, and `sealrun sweep` cleans the node.
  job_desc.requeue = 0
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  -- The script cannot be changed after submission; nothing here changes what runs.
  return slurm.SUCCESS
end

load_config()
slurm.log_info("sealrun gate: loaded; sealrun executables: %s", table.concat(config.sealrun, " "))
return slurm.SUCCESS
