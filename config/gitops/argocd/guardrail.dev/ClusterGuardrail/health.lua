-- Argo CD health of a guardrail.dev ClusterGuardrail, read from the kstatus conditions its
-- controller writes (api/v1alpha1/conditions.go), in the order kstatus and Flux read them:
-- a generation the controller has not handled yet, Reconciling, Stalled, then Ready.
--
-- Ready means the policy is valid and distributed; it leaves out whether pods enforce it
-- (the Enforced condition), so that a sync never waits on pods of a namespace that is not
-- opted in to injection. A Ready ClusterGuardrail is Healthy, and its message carries the Enforced
-- message, so a partial rollout or pods without a guard still show in Argo CD.
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
  hs.message = "Waiting for the controller to report the ClusterGuardrail's status"
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

-- Reconciling: waiting for something on its way (a ClusterClassifier becoming Ready) or retrying
-- after a transient error.
if isTrue(reconciling) then
  hs.status = "Progressing"
  hs.message = reconciling.message
  return hs
end

-- Stalled: the spec (or its ClusterClassifier's) cannot be compiled; only an edit fixes it.
local stalled = findCondition(st.conditions, "Stalled")
if isTrue(stalled) then
  hs.status = "Degraded"
  hs.message = stalled.message
  return hs
end

-- Ready False without Stalled is Progressing, not Degraded: the controllers set Ready False
-- on their own only while they wait for a dependency that appears without this object
-- changing (its ClusterClassifier created or becoming Ready), and every terminal error is
-- Stalled. Degraded here would fail syncs that will heal by themselves.
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
hs.message = ready.message
local enforced = findCondition(st.conditions, "Enforced")
if enforced ~= nil and enforced.message ~= nil and enforced.message ~= "" then
  hs.message = hs.message .. ". " .. enforced.message
end
return hs
