${getters}
PyGetSetDef ${op}_properties[] = {
    THP_FUNCTION_DEFAULT_PROPERTIES,
    ${entries}
    {nullptr}};
PyTypeObject ${op}_type;
