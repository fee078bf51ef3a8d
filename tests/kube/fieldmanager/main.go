// kube-fieldmanager: the parts of kube-apiserver and Argo CD that the Kubernetes API test server
// (tests/kube/kube_api_server.py) must not imitate, done by the libraries they use.
//
//   - Field ownership of Secrets, with sigs.k8s.io/structured-merge-diff (the server-side-apply
//     library kube-apiserver links): every create, update and merge patch records an `Update`
//     manager owning the fields it set; every server-side apply an `Apply` manager; conflicts,
//     co-ownership, force and pruning are the library's. The layer kube-apiserver puts around it
//     (k8s.io/apiserver's fieldmanager package, not packaged by Debian) is written here after its
//     code: manager identifiers (an Update manager is keyed with its API version, an Apply manager
//     without), the metadata fields never tracked (stripMetaManager), managedFields in and out
//     of kube's format (FieldsV1), an update that may set managedFields itself or reset them
//     (`[]`, `[{}]`: isResetManagedFields), and the 409 text
//     (NewConflictError / printManager).
//   - ApplicationSet goTemplates, with Go's text/template and sprig's function map minus `env`,
//     `expandenv` and `getHostByName`, as Argo CD's ApplicationSet controller renders them
//     (every string of the template, map keys too, one template each, options applied).
//
// Not modelled: the last-applied-configuration handling kube does for a manager called
// `kubectl` (lastAppliedUpdater/lastAppliedManager), the cap of 10 Update managers
// (capManagersManager), subresources, and any kind but Secret.
//
// One JSON request a line on stdin, one JSON answer a line on stdout:
//
//	{"op": "create", "manager": M, "object": O}              -> {"object": O with managedFields}
//	{"op": "update", "manager": M, "live": L, "object": O}   -> {"object": ...}
//	{"op": "apply", "manager": M, "force": F, "live": L|null, "patch": P}
//	                                                         -> {"object": ...} or {"conflict": {"message", "causes"}}
//	{"op": "render", "template": T, "params": P, "options": [...]} -> {"value": ...}
//
// and {"error": "..."} for anything that fails otherwise.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/template"
	"time"

	sprig "github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v4/merge"
	"sigs.k8s.io/structured-merge-diff/v4/typed"
)

// The schema of a core/v1 Secret, as kube-apiserver's OpenAPI gives it to the library: maps of
// strings are granular (each key its own field), ownerReferences a list keyed by uid,
// finalizers a set.
const secretSchema = `types:
- name: secret
  map:
    fields:
    - name: apiVersion
      type: {scalar: string}
    - name: kind
      type: {scalar: string}
    - name: metadata
      type: {namedType: objectMeta}
    - name: data
      type: {namedType: stringMap}
    - name: stringData
      type: {namedType: stringMap}
    - name: type
      type: {scalar: string}
    - name: immutable
      type: {scalar: boolean}
- name: stringMap
  map:
    elementType: {scalar: string}
- name: objectMeta
  map:
    fields:
    - name: name
      type: {scalar: string}
    - name: generateName
      type: {scalar: string}
    - name: namespace
      type: {scalar: string}
    - name: uid
      type: {scalar: string}
    - name: resourceVersion
      type: {scalar: string}
    - name: generation
      type: {scalar: numeric}
    - name: creationTimestamp
      type: {scalar: string}
    - name: deletionTimestamp
      type: {scalar: string}
    - name: deletionGracePeriodSeconds
      type: {scalar: numeric}
    - name: selfLink
      type: {scalar: string}
    - name: labels
      type: {namedType: stringMap}
    - name: annotations
      type: {namedType: stringMap}
    - name: finalizers
      type:
        list:
          elementType: {scalar: string}
          elementRelationship: associative
    - name: ownerReferences
      type:
        list:
          elementType: {namedType: ownerReference}
          elementRelationship: associative
          keys: [uid]
- name: ownerReference
  map:
    fields:
    - name: apiVersion
      type: {scalar: string}
    - name: kind
      type: {scalar: string}
    - name: name
      type: {scalar: string}
    - name: uid
      type: {scalar: string}
    - name: controller
      type: {scalar: boolean}
    - name: blockOwnerDeletion
      type: {scalar: boolean}
`

const apiVersion = fieldpath.APIVersion("v1")

var secretType typed.ParseableType

// The fields kube-apiserver never records an owner for (stripMetaManager).
var stripped = fieldpath.NewSet(
	fieldpath.MakePathOrDie("apiVersion"),
	fieldpath.MakePathOrDie("kind"),
	fieldpath.MakePathOrDie("metadata"),
	fieldpath.MakePathOrDie("metadata", "name"),
	fieldpath.MakePathOrDie("metadata", "namespace"),
	fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
	fieldpath.MakePathOrDie("metadata", "selfLink"),
	fieldpath.MakePathOrDie("metadata", "uid"),
	fieldpath.MakePathOrDie("metadata", "clusterName"),
	fieldpath.MakePathOrDie("metadata", "generation"),
	fieldpath.MakePathOrDie("metadata", "managedFields"),
	fieldpath.MakePathOrDie("metadata", "resourceVersion"),
)

// One API version: nothing to convert.
type sameVersion struct{}

func (sameVersion) Convert(object *typed.TypedValue, _ fieldpath.APIVersion) (*typed.TypedValue, error) {
	return object, nil
}

func (sameVersion) IsMissingVersionError(error) bool { return false }

var updater = &merge.Updater{Converter: sameVersion{}}

// A metav1.ManagedFieldsEntry, as served.
type managedFieldsEntry struct {
	Manager    string          `json:"manager,omitempty"`
	Operation  string          `json:"operation,omitempty"`
	APIVersion string          `json:"apiVersion,omitempty"`
	Time       string          `json:"time,omitempty"`
	FieldsType string          `json:"fieldsType,omitempty"`
	FieldsV1   json.RawMessage `json:"fieldsV1,omitempty"`
}

// The key kube-apiserver gives a manager inside the library (BuildManagerIdentifier): the
// entry without its fields and time; an applier without its API version, so that it is the
// same manager whatever version it applies with.
func managerKey(manager, operation string) string {
	entry := managedFieldsEntry{Manager: manager, Operation: operation}
	if operation == "Update" {
		entry.APIVersion = string(apiVersion)
	}
	key, _ := json.Marshal(entry)
	return string(key)
}

// printManager, as kube-apiserver words a manager in a conflict.
func printManager(key string) string {
	var entry managedFieldsEntry
	if err := json.Unmarshal([]byte(key), &entry); err != nil {
		return fmt.Sprintf("%q", key)
	}
	if entry.Operation == "Update" {
		return fmt.Sprintf("%q using %v", entry.Manager, entry.APIVersion)
	}
	return fmt.Sprintf("%q", entry.Manager)
}

type object = map[string]interface{}

func metadataOf(obj object) object {
	meta, _ := obj["metadata"].(map[string]interface{})
	if meta == nil {
		meta = object{}
		obj["metadata"] = meta
	}
	return meta
}

// The object's managedFields decoded for the library, with each entry's time kept by key.
func decodeManaged(obj object) (fieldpath.ManagedFields, map[string]string, error) {
	managed := fieldpath.ManagedFields{}
	times := map[string]string{}
	raw, ok := metadataOf(obj)["managedFields"]
	if !ok || raw == nil {
		return managed, times, nil
	}
	encoded, err := json.Marshal(raw)
	if err != nil {
		return nil, nil, err
	}
	var entries []managedFieldsEntry
	if err := json.Unmarshal(encoded, &entries); err != nil {
		return nil, nil, fmt.Errorf("metadata.managedFields: %v", err)
	}
	for i, entry := range entries {
		if entry.Operation != "Apply" && entry.Operation != "Update" {
			return nil, nil, fmt.Errorf(".metadata.managedFields[%d].operation: must be Apply or Update", i)
		}
		set := fieldpath.NewSet()
		if len(entry.FieldsV1) > 0 {
			if err := set.FromJSON(bytes.NewReader(entry.FieldsV1)); err != nil {
				return nil, nil, fmt.Errorf(".metadata.managedFields[%d].fieldsV1: %v", i, err)
			}
		}
		key := managerKey(entry.Manager, entry.Operation)
		managed[key] = fieldpath.NewVersionedSet(set, fieldpath.APIVersion(entry.APIVersion), entry.Operation == "Apply")
		times[key] = entry.Time
	}
	return managed, times, nil
}

// managedFields in kube's format, in kube's order (sortEncodedManagedFields): by operation
// (Apply before Update), then by time, then by manager.
func encodeManaged(managed fieldpath.ManagedFields, times map[string]string) ([]managedFieldsEntry, error) {
	var entries []managedFieldsEntry
	for key, set := range managed {
		var entry managedFieldsEntry
		if err := json.Unmarshal([]byte(key), &entry); err != nil {
			return nil, err
		}
		fields, err := set.Set().ToJSON()
		if err != nil {
			return nil, err
		}
		entry.APIVersion = string(set.APIVersion())
		entry.Time = times[key]
		entry.FieldsType = "FieldsV1"
		entry.FieldsV1 = fields
		entries = append(entries, entry)
	}
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].Operation != entries[j].Operation {
			return entries[i].Operation == "Apply"
		}
		if entries[i].Time != entries[j].Time {
			return entries[i].Time < entries[j].Time
		}
		return entries[i].Manager < entries[j].Manager
	})
	return entries, nil
}

// A copy of the object without managedFields, typed as a Secret.
func typedSecret(obj object) (*typed.TypedValue, error) {
	encoded, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var plain object
	if err := json.Unmarshal(encoded, &plain); err != nil {
		return nil, err
	}
	delete(metadataOf(plain), "managedFields")
	return secretType.FromUnstructured(plain)
}

// After the library: the metadata kube never tracks taken out, empty sets dropped, the acting
// manager's entry stamped with the time, and the result in kube's format on the object.
func finish(result *typed.TypedValue, managed fieldpath.ManagedFields, times map[string]string, acting string) (object, error) {
	for key, set := range managed {
		kept := set.Set().Difference(stripped)
		if kept.Empty() {
			delete(managed, key)
			continue
		}
		managed[key] = fieldpath.NewVersionedSet(kept, set.APIVersion(), set.Applied())
	}
	if _, ok := managed[acting]; ok {
		times[acting] = time.Now().UTC().Format(time.RFC3339)
	}
	entries, err := encodeManaged(managed, times)
	if err != nil {
		return nil, err
	}
	out, ok := result.AsValue().Unstructured().(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("the merged object is not a map")
	}
	if len(entries) > 0 {
		metadataOf(out)["managedFields"] = entries
	} else {
		delete(metadataOf(out), "managedFields")
	}
	return out, nil
}

type request struct {
	Op       string          `json:"op"`
	Manager  string          `json:"manager"`
	Force    bool            `json:"force"`
	Live     object          `json:"live"`
	Object   object          `json:"object"`
	Patch    object          `json:"patch"`
	Template json.RawMessage `json:"template"`
	Params   interface{}     `json:"params"`
	Options  []string        `json:"options"`
}

type cause struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Field   string `json:"field"`
}

type conflict struct {
	Message string  `json:"message"`
	Causes  []cause `json:"causes"`
}

type answer struct {
	Object   object      `json:"object,omitempty"`
	Conflict *conflict   `json:"conflict,omitempty"`
	Value    interface{} `json:"value"`
	Error    string      `json:"error,omitempty"`
}

// NewConflictError's message and causes.
func conflictAnswer(conflicts merge.Conflicts) *conflict {
	var causes []cause
	for _, c := range conflicts {
		causes = append(causes, cause{
			Reason:  "FieldManagerConflict",
			Message: fmt.Sprintf("conflict with %v", printManager(c.Manager)),
			Field:   c.Path.String(),
		})
	}
	if len(conflicts) == 1 {
		return &conflict{
			Message: fmt.Sprintf("Apply failed with 1 conflict: conflict with %v: %v", printManager(conflicts[0].Manager), conflicts[0].Path),
			Causes:  causes,
		}
	}
	byManager := map[string][]fieldpath.Path{}
	for _, c := range conflicts {
		byManager[c.Manager] = append(byManager[c.Manager], c.Path)
	}
	var managers []string
	for m := range byManager {
		managers = append(managers, m)
	}
	sort.Strings(managers)
	var lines []string
	for _, m := range managers {
		lines = append(lines, fmt.Sprintf("conflicts with %v:", printManager(m)))
		for _, p := range byManager[m] {
			lines = append(lines, fmt.Sprintf("- %v", p))
		}
	}
	return &conflict{
		Message: fmt.Sprintf("Apply failed with %d conflicts: %s", len(conflicts), strings.Join(lines, "\n")),
		Causes:  causes,
	}
}

func emptySecret() object {
	return object{"apiVersion": "v1", "kind": "Secret", "metadata": object{}}
}

// An Update (create, update, merge patch): the fields that changed become the manager's. The
// managedFields an update carries replace the live ones when they decode and are not empty
// (a client may edit them: kubectl does, to move ownership); otherwise the live ones count. An
// empty list, or a list of one empty entry, resets them (kube's isResetManagedFields): only what
// this write changes is owned after it, by its manager.
func update(req request) answer {
	live := req.Live
	if live == nil {
		live = emptySecret()
	}
	managed, times := fieldpath.ManagedFields{}, map[string]string{}
	if !isResetManagedFields(req.Object) {
		var err error
		managed, times, err = decodeManaged(req.Object)
		if err != nil || len(managed) == 0 {
			managed, times, err = decodeManaged(live)
			if err != nil {
				return answer{Error: err.Error()}
			}
		}
	}
	liveTyped, err := typedSecret(live)
	if err != nil {
		return answer{Error: err.Error()}
	}
	newTyped, err := typedSecret(req.Object)
	if err != nil {
		return answer{Error: err.Error()}
	}
	key := managerKey(req.Manager, "Update")
	result, managed, err := updater.Update(liveTyped, newTyped, apiVersion, managed, key)
	if err != nil {
		return answer{Error: err.Error()}
	}
	out, err := finish(result, managed, times, key)
	if err != nil {
		return answer{Error: err.Error()}
	}
	return answer{Object: out}
}

// Whether an update's managedFields ask for a reset: `[]` or `[{}]` (isResetManagedFields).
func isResetManagedFields(obj object) bool {
	entries, ok := metadataOf(obj)["managedFields"].([]interface{})
	if !ok {
		return false
	}
	if len(entries) == 1 {
		entry, isMap := entries[0].(map[string]interface{})
		return isMap && len(entry) == 0
	}
	return len(entries) == 0
}

func apply(req request) answer {
	live := req.Live
	if live == nil {
		live = emptySecret()
	}
	managed, times, err := decodeManaged(live)
	if err != nil {
		return answer{Error: err.Error()}
	}
	liveTyped, err := typedSecret(live)
	if err != nil {
		return answer{Error: err.Error()}
	}
	if _, ok := metadataOf(req.Patch)["managedFields"]; ok {
		return answer{Error: "metadata.managedFields must be nil"}
	}
	patchTyped, err := typedSecret(req.Patch)
	if err != nil {
		return answer{Error: err.Error()}
	}
	key := managerKey(req.Manager, "Apply")
	result, managed, err := updater.Apply(liveTyped, patchTyped, apiVersion, managed, key, req.Force)
	if err != nil {
		if conflicts, ok := err.(merge.Conflicts); ok {
			return answer{Conflict: conflictAnswer(conflicts)}
		}
		return answer{Error: err.Error()}
	}
	if result == nil { // nothing changed but, maybe, the owners
		result = liveTyped
	}
	out, err := finish(result, managed, times, key)
	if err != nil {
		return answer{Error: err.Error()}
	}
	return answer{Object: out}
}

// Argo CD's template function map: sprig's, without what reads the environment or the network.
func argoFuncs() template.FuncMap {
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	delete(funcs, "getHostByName")
	return funcs
}

var funcs = argoFuncs()

func renderString(text string, params interface{}, options []string) (string, error) {
	tmpl, err := template.New("base").Funcs(funcs).Parse(text)
	if err != nil {
		return "", fmt.Errorf("failed to parse template %s: %w", text, err)
	}
	for _, option := range options {
		tmpl = tmpl.Option(option)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, params); err != nil {
		return "", fmt.Errorf("failed to execute go template %s: %w", text, err)
	}
	return out.String(), nil
}

// Every string of the template rendered, map keys too, as Argo CD's deeplyReplace does.
func renderValue(value interface{}, params interface{}, options []string) (interface{}, error) {
	switch v := value.(type) {
	case string:
		return renderString(v, params, options)
	case []interface{}:
		out := make([]interface{}, len(v))
		for i, item := range v {
			rendered, err := renderValue(item, params, options)
			if err != nil {
				return nil, err
			}
			out[i] = rendered
		}
		return out, nil
	case map[string]interface{}:
		out := make(map[string]interface{}, len(v))
		for k, item := range v {
			rendered, err := renderValue(item, params, options)
			if err != nil {
				return nil, err
			}
			key, err := renderString(k, params, options)
			if err != nil {
				return nil, err
			}
			out[key] = rendered
		}
		return out, nil
	default:
		return v, nil
	}
}

func render(req request) answer {
	var tmpl interface{}
	if err := json.Unmarshal(req.Template, &tmpl); err != nil {
		return answer{Error: err.Error()}
	}
	value, err := renderValue(tmpl, req.Params, req.Options)
	if err != nil {
		return answer{Error: err.Error()}
	}
	return answer{Value: value}
}

func serve(line []byte) answer {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return answer{Error: fmt.Sprintf("not a request: %v", err)}
	}
	switch req.Op {
	case "create":
		req.Live = nil
		return update(req)
	case "update":
		return update(req)
	case "apply":
		return apply(req)
	case "render":
		return render(req)
	}
	return answer{Error: fmt.Sprintf("unknown op %q", req.Op)}
}

func main() {
	parser, err := typed.NewParser(typed.YAMLObject(secretSchema))
	if err != nil {
		fmt.Fprintln(os.Stderr, "the Secret schema:", err)
		os.Exit(1)
	}
	secretType = parser.Type("secret")
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			encoded, _ := json.Marshal(serve(line))
			out.Write(encoded)
			out.WriteByte('\n')
			out.Flush()
		}
		if err != nil {
			return
		}
	}
}
