-- Argo CD health of a guardrail.dev ModelProvider, read from the kstatus conditions its
-- controller writes (api/v1alpha1/conditions.go), in the order kstatus and Flux read them:
-- a generation the controller has not handled yet, Reconciling, Stalled, then Ready.
--
-- Ready means the spec is one a guard can use and its credential resolves in the Secret of
-- the operator's namespace; how many pods use it is shown, not judged, so that a sync never
-- waits on apps that have not chosen the provider yet.
--
-- Argo CD runs this with Lua's base and table libraries only: no string library, so text
-- is joined with the .. operator.

local function findCondition(conditions, conditionType)
  for _, c in ipairs(conditions) do
    if c.type == conditionType then
      return c
    end
  end
  return nil
end

local function isTrue(c)
  return c ~= nil and c.status == "True"
end

local hs = {}
local st = obj.status
if st == nil or st.conditions == nil or #st.conditions == 0 then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to report the ModelProvider's status"
  return hs
end

local generation = obj.metadata.generation
local reconciling = findCondition(st.conditions, "Reconciling")

-- observedGeneration is set only once a generation is handled (in effect or Stalled), so
-- any other status describes an older spec, whatever its conditions say.
if st.observedGeneration ~= generation then
  hs.status = "Progressing"
  if isTrue(reconciling) and reconciling.observedGeneration == generation then
    hs.message = reconciling.message
  else
    hs.message = "Waiting for the controller to handle generation " .. tostring(generation)
  end
  return hs
end

-- Reconciling: waiting for its credentials Secret (or a key in it) or retrying after a
-- transient error.
if isTrue(reconciling) then
  hs.status = "Progressing"
  hs.message = reconciling.message
  return hs
end

-- Stalled: the spec is one a guard could not use (a URL on the guard's own pod, a header
-- given twice); only an edit fixes it.
local stalled = findCondition(st.conditions, "Stalled")
if isTrue(stalled) then
  hs.status = "Degraded"
  hs.message = stalled.message
  return hs
end

-- Ready False without Stalled is Progressing, not Degraded: the controller sets Ready False
-- on its own only while it waits for a Secret that appears without this object changing,
-- and every terminal error is Stalled.
local ready = findCondition(st.conditions, "Ready")
if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to report Ready"
  return hs
end
if ready.status ~= "True" then
  hs.status = "Progressing"
  hs.message = ready.message
  return hs
end

hs.status = "Healthy"
hs.message = ready.message .. "; used by " .. tostring(st.pods or 0) .. " pods in " ..
  tostring(st.namespaces or 0) .. " namespaces"
return hs
