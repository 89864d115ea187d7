-- Argo CD health check for randomsecret.io/RandomSecret (kstatus conditions).
-- Progressing until the controller has seen this generation and the version
-- exists; Degraded when it is Stalled (the message says what to fix).
hs = {}
local function condition(t)
  if obj.status == nil or obj.status.conditions == nil then return nil end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == t then return c end
  end
  return nil
end
local generation = obj.metadata ~= nil and obj.metadata.generation or nil
local observed = obj.status ~= nil and obj.status.observedGeneration or nil
local stalled = condition("Stalled")
local ready = condition("Ready")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = (stalled.reason or "Stalled") .. ": " .. (stalled.message or "")
elseif observed == nil or generation == nil or observed ~= generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to observe generation " .. tostring(generation)
elseif ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = ready.message or ""
else
  hs.status = "Progressing"
  hs.message = ready ~= nil and ((ready.reason or "") .. ": " .. (ready.message or "")) or "Waiting for the Ready condition"
end
return hs
